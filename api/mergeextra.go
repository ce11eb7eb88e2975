package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// marshalMerged encodes named, a struct of named fields, with the extra
// properties merged in (mergeExtra).
func marshalMerged(named any, extra map[string]any) ([]byte, error) {
	b, err := json.Marshal(named)
	if err != nil {
		return nil, err
	}
	return mergeExtra(b, extra)
}

// mergeExtra adds a record's extra properties to its encoded named fields;
// a named field is never overridden. named must be a flat JSON object as
// encoding/json writes it (no nested objects): the extra properties are
// appended before its closing brace, in key order, without decoding it
// again. In such output a quote inside a string is always escaped, so
// `{"k":` or `,"k":` can only be the key k.
func mergeExtra(named []byte, extra map[string]any) ([]byte, error) {
	if len(extra) == 0 {
		return named, nil
	}
	if len(named) < 2 || named[len(named)-1] != '}' {
		return nil, fmt.Errorf("mergeExtra: %.40q is not a JSON object", named)
	}
	out := append(make([]byte, 0, len(named)+32*len(extra)), named[:len(named)-1]...)
	empty := len(named) == 2
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		key, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		if hasKey(named, key) {
			continue
		}
		v, err := json.Marshal(extra[k])
		if err != nil {
			return nil, err
		}
		if !empty {
			out = append(out, ',')
		}
		empty = false
		out = append(append(append(out, key...), ':'), v...)
	}
	return append(out, '}'), nil
}

// hasKey reports whether the flat JSON object obj has the encoded key.
func hasKey(obj, key []byte) bool {
	for off := 0; ; {
		i := bytes.Index(obj[off:], key)
		if i < 0 {
			return false
		}
		i += off
		if i > 0 && (obj[i-1] == '{' || obj[i-1] == ',') && i+len(key) < len(obj) && obj[i+len(key)] == ':' {
			return true
		}
		off = i + 1
	}
}
