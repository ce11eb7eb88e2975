package api

import (
	"bytes"
	"slices"
	"strconv"
)

// itemBytes is about the encoded size of one service record, to size the
// response buffer once.
const itemBytes = 640

// appendJSON writes a list envelope of service records by hand, in exactly
// the bytes encoding/json would write (one trailing newline, as
// json.Encoder). Through encoding/json, each item's MarshalJSON output is
// validated and copied again by the encoder (appendCompact): for the 500
// records of /services/due that pass was most of the response's CPU time.
// It reports false for data of other types, which take the ordinary path.
func (e *Envelope[T]) appendJSON(b []byte) ([]byte, bool, error) {
	var (
		n     int
		isNil bool
		item  func(int) ([]byte, error)
	)
	switch d := any(e.Data).(type) {
	case []Service:
		n, isNil, item = len(d), d == nil, func(i int) ([]byte, error) { return d[i].MarshalJSON() }
	case []DueService:
		n, isNil, item = len(d), d == nil, func(i int) ([]byte, error) { return d[i].MarshalJSON() }
	default:
		return b, false, nil
	}
	b = slices.Grow(b, 128+n*itemBytes)
	b = append(b, `{"success":`...)
	b = strconv.AppendBool(b, e.Success)
	b = append(b, `,"data":`...)
	if isNil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range n {
			if i > 0 {
				b = append(b, ',')
			}
			j, err := item(i)
			if err != nil {
				return nil, true, err
			}
			b = append(b, j...)
		}
		b = append(b, ']')
	}
	var meta bytes.Buffer
	if err := encodeJSON(&meta, e.Meta); err != nil {
		return nil, true, err
	}
	b = append(b, `,"meta":`...)
	b = append(b, bytes.TrimSuffix(meta.Bytes(), []byte("\n"))...)
	return append(b, "}\n"...), true, nil
}
