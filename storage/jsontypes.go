package storage

import "encoding/json"

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
