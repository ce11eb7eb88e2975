package api

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A JSON request body is taken exactly as the client sent it. encoding/json
// alone is lenient in three ways that would change or hide what was sent:
// it matches keys to fields case-insensitively (and with Unicode folding),
// it lets a repeated key silently overwrite the first, and it replaces
// invalid UTF-8 and unpaired surrogate escapes with U+FFFD. decodeBody walks
// the tokens once, against the target type, before encoding/json fills it.

// textFaults maps a field path ("passenger_name", "stops[2].name") to why
// its string value is not text the API stores. The caller reports them as
// VALIDATION_FAILED together with its own validation of the fields.
type textFaults map[string]string

const (
	reasonNotUTF8    = "not valid UTF-8"
	reasonSurrogate  = "not valid UTF-8 (an unpaired UTF-16 surrogate escape)"
	reasonNULInValue = "must not contain NUL characters"
)

// invalidBody is the INVALID_BODY error with the reason appended to its
// message.
func invalidBody(reason string, details map[string]any) *Error {
	return newError(CodeInvalidBody, "invalid request body: "+reason, details)
}

// decodeBody reads exactly one JSON object from r into a T. It is the one
// decoder of every JSON request body.
//
// The body is INVALID_BODY (an *Error) when it is not one JSON object, when
// a key does not equal a JSON field name of T exactly (case included, at
// every depth), when an object repeats a key, when a key is not valid
// UTF-8, or when a value has the wrong type. A string value that is not
// valid UTF-8, holds an unpaired surrogate escape or a NUL character is not
// an INVALID_BODY: it is returned in faults (the body is well formed; the
// field's value is not acceptable), and v holds encoding/json's replacement
// for it. A body over the size limit returns the *http.MaxBytesError (413).
func decodeBody[T any](r io.Reader) (v T, faults textFaults, err error) {
	body, err := io.ReadAll(r)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return v, nil, err
		}
		// A body cut short or sent too slowly is the client's fault.
		return v, nil, invalidBody("the body could not be read completely", nil)
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return v, nil, invalidBody("the body must be a JSON object", nil)
	}
	w := bodyWalker{dec: json.NewDecoder(bytes.NewReader(body)), raw: body, faults: textFaults{}}
	if err := w.value(reflect.TypeFor[T](), ""); err != nil {
		return v, nil, err
	}
	if _, err := w.dec.Token(); err != io.EOF {
		return v, nil, invalidBody("unexpected data after the JSON object", nil)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields() // the walk already refused them; kept as a second lock
	if err := dec.Decode(&v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return v, nil, invalidBody(fmt.Sprintf("field %q has the wrong type (want %s)", typeErr.Field, typeErr.Type),
				map[string]any{"field": typeErr.Field})
		}
		return v, nil, invalidBody("not valid JSON", nil)
	}
	if len(w.faults) == 0 {
		w.faults = nil
	}
	return v, w.faults, nil
}

// bodyWalker checks the tokens of a body against the type it will be
// decoded into. raw is the body; the decoder's input offsets index it.
type bodyWalker struct {
	dec    *json.Decoder
	raw    []byte
	faults textFaults
}

// token reads the next token and the raw bytes it was read from (with the
// separators before it, which are ASCII).
func (w *bodyWalker) token() (json.Token, []byte, error) {
	start := w.dec.InputOffset()
	tok, err := w.dec.Token()
	if err != nil {
		return nil, nil, invalidBody("not valid JSON", nil)
	}
	return tok, w.raw[start:w.dec.InputOffset()], nil
}

// value walks one value whose Go type is t (nil: any) at path.
func (w *bodyWalker) value(t reflect.Type, path string) error {
	tok, raw, err := w.token()
	if err != nil {
		return err
	}
	switch tok := tok.(type) {
	case json.Delim:
		if tok == '{' {
			return w.object(t, path)
		}
		return w.array(elemType(t), path)
	case string:
		if reason := textFault(raw, tok); reason != "" {
			w.faults[fieldName(path)] = reason
		}
	}
	return nil
}

// object walks the members of an object after its '{'.
func (w *bodyWalker) object(t reflect.Type, path string) error {
	fields, strict := objectFields(t)
	seen := map[string]bool{}
	for w.dec.More() {
		tok, raw, err := w.token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if reason := textFault(raw, key); reason != "" {
			return invalidBody("a key is not valid text: "+reason, nil)
		}
		child := joinPath(path, key)
		if seen[key] {
			return invalidBody(fmt.Sprintf("duplicate key %q", child), map[string]any{"field": child})
		}
		seen[key] = true
		ft, known := fields[key]
		if strict && !known {
			return invalidBody(fmt.Sprintf("unknown field %q", child), map[string]any{"field": child})
		}
		if !strict {
			ft = elemType(t)
		}
		if err := w.value(ft, child); err != nil {
			return err
		}
	}
	_, _, err := w.token() // '}'
	return err
}

// array walks the elements of an array after its '['.
func (w *bodyWalker) array(elem reflect.Type, path string) error {
	for i := 0; w.dec.More(); i++ {
		if err := w.value(elem, path+"["+strconv.Itoa(i)+"]"); err != nil {
			return err
		}
	}
	_, _, err := w.token() // ']'
	return err
}

// textFault says why a string token is not text the API accepts, or "".
// raw holds its literal as sent; s what encoding/json made of it.
func textFault(raw []byte, s string) string {
	switch {
	case !utf8.Valid(raw):
		return reasonNotUTF8
	case unpairedSurrogate(raw):
		return reasonSurrogate
	case strings.IndexByte(s, 0) >= 0:
		return reasonNULInValue
	}
	return ""
}

// unpairedSurrogate reports whether a JSON string literal has a \uXXXX
// escape of a UTF-16 surrogate that is not a high surrogate followed at
// once by an escaped low surrogate.
func unpairedSurrogate(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++ // the escaped character; a "\\" pair is skipped whole
		if i >= len(raw) || raw[i] != 'u' {
			continue
		}
		r := hex4(raw[i+1:])
		switch {
		case r >= 0xdc00 && r <= 0xdfff:
			return true
		case r >= 0xd800 && r <= 0xdbff:
			next := raw[i+5:]
			if len(next) < 6 || next[0] != '\\' || next[1] != 'u' {
				return true
			}
			if lo := hex4(next[2:]); lo < 0xdc00 || lo > 0xdfff {
				return true
			}
			i += 10
		}
	}
	return false
}

// hex4 is the value of the four hex digits at the start of b, or -1. The
// JSON syntax was checked, so after \u there are always four.
func hex4(b []byte) int {
	if len(b) < 4 {
		return -1
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 16)
	if err != nil {
		return -1
	}
	return int(n)
}

// objectFields are the JSON members of t. strict is true when t is a
// struct that encoding/json fills field by field: only these exact names
// are accepted. Maps and untyped values take any key.
func objectFields(t reflect.Type) (fields map[string]reflect.Type, strict bool) {
	t = deref(t)
	if t == nil || t.Kind() != reflect.Struct || customJSON(t) {
		return nil, false
	}
	fields = map[string]reflect.Type{}
	addStructFields(fields, t)
	return fields, true
}

// addStructFields adds the JSON names of t's fields, with embedded
// structs' promoted as encoding/json promotes them (a shallower name
// wins).
func addStructFields(fields map[string]reflect.Type, t reflect.Type) {
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && deref(f.Type).Kind() == reflect.Struct {
			embedded = append(embedded, deref(f.Type))
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	for _, e := range embedded {
		inner := map[string]reflect.Type{}
		addStructFields(inner, e)
		for name, ft := range inner {
			if _, ok := fields[name]; !ok {
				fields[name] = ft
			}
		}
	}
}

// elemType is the element type of a slice, array or map type t; nil (any)
// otherwise.
func elemType(t reflect.Type) reflect.Type {
	t = deref(t)
	if t == nil || customJSON(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return t.Elem()
	}
	return nil
}

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// customJSON reports whether t decodes itself (time.Time, json.RawMessage,
// ...): its keys are its own business.
func customJSON(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return p.Implements(reflect.TypeFor[json.Unmarshaler]()) || p.Implements(reflect.TypeFor[encoding.TextUnmarshaler]())
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fieldName names the value at path; the top-level value is "body".
func fieldName(path string) string {
	if path == "" {
		return "body"
	}
	return path
}
