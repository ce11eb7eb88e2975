package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3gen"
	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/storage"
)

// wireType is a component schema generated from a Go wire type: the type
// gives the properties and their JSON types, fields adds what Go types do
// not say (descriptions, enums, bounds, formats, null).
type wireType struct {
	name, description string
	value             any
	// open marks an object that may carry properties beyond the listed
	// ones (additionalProperties: true); every other object is closed.
	open bool
	// required, when set, replaces the generated list (every field without
	// omitempty).
	required []string
	// minProperties is the least number of properties of the object (a
	// PATCH names at least one field).
	minProperties uint64
	fields        map[string][]fieldOpt
	// uses are the component schemas the fields refer to (ref).
	uses []wireType
	// complete, when set, adds what relates fields to each other (an
	// if/then) to the finished schema.
	complete func(*openapi3.Schema)
}

// fieldOpt refines the schema of one property.
type fieldOpt func(*openapi3.SchemaRef)

// schemaOpt is a fieldOpt that changes the property's inline schema.
func schemaOpt(f func(*openapi3.Schema)) fieldOpt {
	return func(r *openapi3.SchemaRef) {
		if r.Value != nil {
			f(r.Value)
		}
	}
}

func desc(d string) fieldOpt { return schemaOpt(func(s *openapi3.Schema) { s.Description = d }) }

func enum(values ...string) fieldOpt {
	return schemaOpt(func(s *openapi3.Schema) { s.Enum = anys(values) })
}

func itemEnum(values ...string) fieldOpt {
	return schemaOpt(func(s *openapi3.Schema) { s.Items.Value.Enum = anys(values) })
}

func format(f string) fieldOpt { return schemaOpt(func(s *openapi3.Schema) { s.Format = f }) }

func minimum(n float64) fieldOpt { return schemaOpt(func(s *openapi3.Schema) { s.Min = &n }) }

func maximum(n float64) fieldOpt { return schemaOpt(func(s *openapi3.Schema) { s.Max = &n }) }

func maxLen(n uint64) fieldOpt { return schemaOpt(func(s *openapi3.Schema) { s.MaxLength = &n }) }

func minLen(n uint64) fieldOpt { return schemaOpt(func(s *openapi3.Schema) { s.MinLength = n }) }

func minItemsOne() fieldOpt { return schemaOpt(func(s *openapi3.Schema) { s.MinItems = 1 }) }

func maxItems(n uint64) fieldOpt { return schemaOpt(func(s *openapi3.Schema) { s.MaxItems = &n }) }

func uniqueItems() fieldOpt { return schemaOpt(func(s *openapi3.Schema) { s.UniqueItems = true }) }

// itemPattern is the pattern every item of an array property matches.
func itemPattern(p string) fieldOpt {
	return schemaOpt(func(s *openapi3.Schema) { s.Items.Value.Pattern = p })
}

// itemLen bounds the length of every item of an array property.
func itemLen(min, max uint64) fieldOpt {
	return schemaOpt(func(s *openapi3.Schema) { s.Items.Value.MinLength, s.Items.Value.MaxLength = min, &max })
}

func pattern(p string) fieldOpt { return schemaOpt(func(s *openapi3.Schema) { s.Pattern = p }) }

// nullable lets the property be null as well (OpenAPI 3.1: a type list).
func nullable() fieldOpt {
	return schemaOpt(func(s *openapi3.Schema) {
		if !s.Type.Includes(openapi3.TypeNull) {
			t := append(s.Type.Slice(), openapi3.TypeNull)
			s.Type = (*openapi3.Types)(&t)
		}
	})
}

// notNull removes null from the property's types: a pointer field the
// server requires a value for (the generator makes every pointer
// nullable).
func notNull() fieldOpt {
	return schemaOpt(func(s *openapi3.Schema) {
		t := slices.DeleteFunc(s.Type.Slice(), func(x string) bool { return x == openapi3.TypeNull })
		s.Type = (*openapi3.Types)(&t)
	})
}

// typed replaces the generated type (for types with their own JSON form).
func typed(t string) fieldOpt {
	return schemaOpt(func(s *openapi3.Schema) { s.Type = &openapi3.Types{t}; s.Properties = nil; s.Required = nil })
}

// ref replaces the property by a reference to another component schema.
func ref(name string) fieldOpt {
	return func(r *openapi3.SchemaRef) { *r = *componentRef(name) }
}

// freeObject is a JSON object with any properties.
func freeObject() fieldOpt {
	return schemaOpt(func(s *openapi3.Schema) {
		yes := true
		s.Type = &openapi3.Types{openapi3.TypeObject}
		s.Properties = nil
		s.AdditionalProperties = openapi3.AdditionalProperties{Has: &yes}
	})
}

func anys[T any](values []T) []any {
	out := make([]any, len(values))
	for i, v := range values {
		out[i] = v
	}
	return out
}

func componentRef(name string) *openapi3.SchemaRef {
	return openapi3.NewSchemaRef("#/components/schemas/"+name, nil)
}

// errorSchema is the Error component: the error of every failure.
func errorSchema() wireType {
	return wireType{name: "Error", value: Error{}, description: "What went wrong (docs/design.md §4).", fields: map[string][]fieldOpt{
		"code":    {enum(errorCodes()...), desc("Machine-readable error code.")},
		"message": {desc("Human-readable explanation.")},
		"details": {freeObject(), desc(`Facts about the failure, for example {"parameter": "per_page", "reason": "must be between 1 and ` + strconv.Itoa(storage.MaxPerPage) + `"}.`)},
	}}
}

// errorCodes lists the error codes of the error table, sorted.
func errorCodes() []string { return slices.Sorted(maps.Keys(codeStatus)) }

// wireSchemas generates the component schemas of types. Two types of one
// name must be one declaration (the same schema).
func wireSchemas(types []wireType) (openapi3.Schemas, error) {
	out := openapi3.Schemas{}
	for _, w := range types {
		s, err := wireSchema(w)
		if err != nil {
			return nil, err
		}
		if prev, ok := out[w.name]; ok {
			a, _ := json.Marshal(prev)
			b, _ := json.Marshal(s)
			if !bytes.Equal(a, b) {
				return nil, fmt.Errorf("schema %s: declared twice, differently", w.name)
			}
			continue
		}
		out[w.name] = s
	}
	return out, nil
}

// wireSchema generates the component schema of w from its Go type (with
// Fuego's schema customizer, which reads the struct tags) and its fields.
func wireSchema(w wireType) (*openapi3.SchemaRef, error) {
	gen := openapi3gen.NewGenerator(openapi3gen.SchemaCustomizer(fuego.SchemaCustomizer))
	r, err := gen.NewSchemaRefForValue(w.value, nil)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", w.name, err)
	}
	s := r.Value
	s.Description = w.description
	for name, p := range s.Properties {
		normalizeNull(p.Value)
		for _, sub := range p.Value.Properties {
			if sub.Value != nil {
				normalizeNull(sub.Value)
			}
		}
		opts, ok := w.fields[name]
		if !ok {
			return nil, fmt.Errorf("schema %s: property %q has no entry in its fields (describe it)", w.name, name)
		}
		for _, o := range opts {
			o(p)
		}
		if p.Value == nil {
			continue // a reference
		}
		if p.Value.Description == "" {
			return nil, fmt.Errorf("schema %s: property %q has no description", w.name, name)
		}
		closeObjects(p.Value)
	}
	for name := range w.fields {
		if _, ok := s.Properties[name]; !ok {
			return nil, fmt.Errorf("schema %s: its fields name %q, which the Go type does not have", w.name, name)
		}
	}
	if w.required != nil {
		s.Required = w.required
	}
	s.MinProps = w.minProperties
	if w.complete != nil {
		w.complete(s)
	}
	open := w.open
	s.AdditionalProperties = openapi3.AdditionalProperties{Has: &open}
	return openapi3.NewSchemaRef("", s), nil
}

// normalizeNull states null the OpenAPI 3.1 way: a pointer (which the
// generator marks nullable) may be null; a list or map (which Fuego marks
// nullable) may not: the wire types encode them as [] and {}.
func normalizeNull(s *openapi3.Schema) {
	t := s.Type.Slice()
	t = slices.DeleteFunc(slices.Clone(t), func(x string) bool { return x == openapi3.TypeNull })
	if s.Nullable {
		t = append(t, openapi3.TypeNull)
		s.Nullable = false
	}
	if len(t) == 0 {
		s.Type = nil
		return
	}
	s.Type = (*openapi3.Types)(&t)
}

// closeObjects gives an inline object schema without free properties
// additionalProperties: false (maps keep their value schema).
func closeObjects(s *openapi3.Schema) {
	if s.Type.Includes(openapi3.TypeObject) && s.AdditionalProperties.Has == nil && s.AdditionalProperties.Schema == nil {
		no := false
		s.AdditionalProperties = openapi3.AdditionalProperties{Has: &no}
	}
}
