package importfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetapi/fleetapi/storage"
)

// record is one decoded record with its place in the file.
type record[T any] struct {
	ref recordRef
	val T
}

// decodeImport reads the file strictly into one step per section: unknown
// sections or fields, wrong types and trailing data are errors wrapping
// storage.ErrInvalid.
func decodeImport(r io.Reader, secs []*section) ([]step, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("import: read: %w", err)
	}
	var keys []string
	for _, s := range secs {
		if !slices.Contains(keys, s.File) {
			keys = append(keys, s.File)
		}
	}
	raw := reflect.New(fileType(keys))
	if err := decodeStrict(data, raw.Interface()); err != nil {
		return nil, fmt.Errorf("import: %w: %s", storage.ErrInvalid, describeJSONError(err))
	}
	steps := make([]step, len(secs))
	for i, s := range secs {
		raws := raw.Elem().Field(slices.Index(keys, s.File)).Interface().([]json.RawMessage)
		if steps[i], err = s.decode(raws); err != nil {
			return nil, err
		}
	}
	return steps, nil
}

// fileType is the Go type of a file with these sections: a struct with a
// field of raw records per key, so that the file decodes as strictly (and
// its errors read the same) as into a struct written by hand.
func fileType(keys []string) reflect.Type {
	fields := make([]reflect.StructField, len(keys))
	for i, k := range keys {
		fields[i] = reflect.StructField{
			Name: "S" + strconv.Itoa(i),
			Type: reflect.TypeFor[[]json.RawMessage](),
			Tag:  reflect.StructTag(`json:` + strconv.Quote(k)),
		}
	}
	return reflect.StructOf(fields)
}

// decodeRecords decodes the records of a section, each strictly.
func decodeRecords[T any](s Section, raws []json.RawMessage) ([]record[T], error) {
	recs := make([]record[T], len(raws))
	for i, raw := range raws {
		ref := recordRef{section: s.File, index: i, key: recordKey(s.Key, raw)}
		recs[i].ref = ref
		if err := decodeStrict(raw, &recs[i].val); err != nil {
			return nil, ref.errorf("%s", describeJSONError(err))
		}
	}
	return recs, nil
}

// decodeStrict decodes one JSON value, refusing unknown fields and
// anything after the value.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

// recordKey names a record by its natural key, as far as it can be read.
func recordKey(fields []string, raw json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	var parts []string
	for _, f := range fields {
		if s, ok := m[f].(string); ok {
			parts = append(parts, fmt.Sprintf("%s %q", f, s))
		}
	}
	return strings.Join(parts, ", ")
}
