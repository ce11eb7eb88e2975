package storage

import (
	"encoding/json"
	"fmt"
)

// StringList is a text[] column. It encodes as a JSON array, [] when empty
// or nil, never null. Tag its fields with bun's ",array" option.
type StringList []string

// MarshalJSON encodes the list, nil as [].
func (l StringList) MarshalJSON() ([]byte, error) {
	if l == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]string(l))
}

// orEmpty returns l, or an empty list when l is nil, so that a NOT NULL
// text[] column receives '{}' rather than NULL.
func (l StringList) orEmpty() StringList {
	if l == nil {
		return StringList{}
	}
	return l
}

// JSONObject is a jsonb column holding an object. It encodes as a JSON
// object, {} when nil, never null. Tag its fields with "type:jsonb".
type JSONObject map[string]any

// MarshalJSON encodes the object, nil as {}.
func (o JSONObject) MarshalJSON() ([]byte, error) {
	if o == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(map[string]any(o))
}

// Scan reads a json or jsonb column (implements sql.Scanner). The empty
// object, which most rows hold, is recognised without running the JSON
// decoder; NULL scans as nil.
func (o *JSONObject) Scan(src any) error {
	var b []byte
	switch v := src.(type) {
	case nil:
		*o = nil
		return nil
	case []byte:
		b = v
	case string:
		b = []byte(v)
	default:
		return fmt.Errorf("storage.JSONObject: cannot scan %T", src)
	}
	if string(b) == "{}" {
		*o = JSONObject{}
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("storage.JSONObject: %w", err)
	}
	*o = m
	return nil
}
