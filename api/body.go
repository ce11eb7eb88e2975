package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
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
	case nil:
		// null only where the Go type can hold it: a pointer (which the
		// schema generator declares nullable) or an untyped value. A list, a
		// map or a plain value is never null, in the document or here
		// (issue 19 item 19: "privileges": null was taken as absent).
		if t != nil && t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface {
			return invalidBody(fmt.Sprintf("field %q must not be null", fieldName(path)), map[string]any{"field": fieldName(path)})
		}
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
