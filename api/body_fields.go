package api

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
)

// The JSON shape of a body's target type, as encoding/json sees it: which
// exact keys an object takes and what type each value has.

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
