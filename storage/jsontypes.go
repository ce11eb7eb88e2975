package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
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
	if b, ok := src.([]byte); ok && string(b) == "{}" || src == "{}" {
		*o = JSONObject{}
		return nil
	}
	return scanJSON(o, src, "storage.JSONObject")
}

// scanJSON decodes src, a json or jsonb column as a sql.Scanner receives
// it, into *dst; NULL scans as the zero value. what names the
// destination in errors.
func scanJSON[T any](dst *T, src any, what string) error {
	var b []byte
	switch v := src.(type) {
	case nil:
		var zero T
		*dst = zero
		return nil
	case []byte:
		b = v
	case string:
		b = []byte(v)
	default:
		return fmt.Errorf("%s: cannot scan %T", what, src)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	*dst = out
	return nil
}

// Bounds of the numbers ParseJSONObject accepts, well inside PostgreSQL's
// numeric (131072 digits before the point, 16383 after), which jsonb
// stores numbers as.
const (
	maxJSONNumberDigits   = 1000
	maxJSONNumberExponent = 1000
)

// ParseJSONObject parses s as one JSON object that PostgreSQL stores as
// jsonb unchanged: valid UTF-8; no \u0000 escape and no unpaired surrogate
// escape in a string (jsonb refuses both); numbers of at most 1000 digits
// with an exponent from -1000 to 1000, kept exactly as written (as
// json.Number, never rounded to a float64). Nothing may follow the object.
func ParseJSONObject(s string) (JSONObject, error) {
	if !utf8.ValidString(s) {
		return nil, errors.New("JSON object: not valid UTF-8")
	}
	if err := checkJSONEscapes(s); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return nil, errors.New("not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("JSON object: data after the object")
	}
	if err := checkJSONNumbers(obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// checkJSONEscapes refuses the \u escapes inside the strings of the JSON
// text s that jsonb cannot store: \u0000, and a surrogate that is not a
// high one followed by a low one. Other malformed JSON is left to the
// decoder.
func checkJSONEscapes(s string) error {
	inString := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case !inString:
			inString = c == '"'
		case c == '"':
			inString = false
		case c == '\\' && i+1 < len(s) && s[i+1] != 'u':
			i++ // a one-character escape, \" and \\ among them
		case c == '\\':
			r, ok := hex4(s, i+2)
			if !ok {
				return nil // not JSON: the decoder says so
			}
			i += 5
			switch {
			case r == 0:
				return errors.New(`JSON object: \u0000 cannot be stored`)
			case r >= 0xDC00 && r <= 0xDFFF:
				return errors.New("JSON object: a low surrogate escape without a high one")
			case utf16.IsSurrogate(r):
				low, ok := hex4(s, i+3)
				if !ok || s[i+1:i+3] != `\u` || low < 0xDC00 || low > 0xDFFF {
					return errors.New("JSON object: a high surrogate escape without a low one")
				}
				i += 6
			}
		}
	}
	return nil
}

// hex4 reads the four hexadecimal digits at s[i:i+4].
func hex4(s string, i int) (rune, bool) {
	if i < 0 || i+4 > len(s) {
		return 0, false
	}
	n, err := strconv.ParseUint(s[i:i+4], 16, 32)
	return rune(n), err == nil
}

// checkJSONNumbers walks a decoded JSON value and refuses numbers outside
// the bounds of ParseJSONObject.
func checkJSONNumbers(v any) error {
	switch x := v.(type) {
	case json.Number:
		mantissa, exp, _ := strings.Cut(strings.ToLower(string(x)), "e")
		digits := 0
		for _, c := range mantissa {
			if c >= '0' && c <= '9' {
				digits++
			}
		}
		if digits > maxJSONNumberDigits {
			return fmt.Errorf("JSON object: a number of more than %d digits", maxJSONNumberDigits)
		}
		if exp != "" {
			if e, err := strconv.Atoi(exp); err != nil || e < -maxJSONNumberExponent || e > maxJSONNumberExponent {
				return fmt.Errorf("JSON object: a number with an exponent outside -%d to %d", maxJSONNumberExponent, maxJSONNumberExponent)
			}
		}
	case map[string]any:
		for _, e := range x {
			if err := checkJSONNumbers(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := checkJSONNumbers(e); err != nil {
				return err
			}
		}
	}
	return nil
}
