package api_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// The values TestSchemaBoundsAccepted sends: what a schema of the OpenAPI
// document allows at its bounds, and the hard values it allows.

// bodyField is one field of a body schema at path ("quotas.devices",
// "imei[]" for the items of a list) and how to set it in a body.
type bodyField struct {
	path   string
	schema *openapi3.Schema
	set    func(body map[string]any, v any)
}

// bodyFields lists the fields of the object schema s: its properties, the
// properties of the objects they hold, and the items of its lists (set as
// a list of that one item).
func bodyFields(s *openapi3.Schema, prefix string) []bodyField {
	var out []bodyField
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for p := range s.Properties {
			if !yield(p) {
				return
			}
		}
	}) {
		p := s.Properties[name].Value
		if p.Type.Includes(openapi3.TypeArray) && p.Items != nil && p.Items.Value.Type.Includes(openapi3.TypeObject) {
			// A list of objects (POST /readings' items) is sent as its base
			// body's: its items are judged one by one, each field at its
			// bounds in TestReadingsItemRejections.
			continue
		}
		out = append(out, bodyField{prefix + name, p, func(b map[string]any, v any) { b[name] = v }})
		if p.Type.Includes(openapi3.TypeObject) && len(p.Properties) > 0 {
			for _, f := range bodyFields(p, prefix+name+".") {
				out = append(out, bodyField{f.path, f.schema, func(b map[string]any, v any) {
					// into the body's object, its other fields kept (a
					// zone's center keeps its lon when lat is set)
					inner := map[string]any{}
					if have, ok := b[name].(map[string]any); ok {
						maps.Copy(inner, have)
					}
					f.set(inner, v)
					b[name] = inner
				}})
			}
		}
		if p.Type.Includes(openapi3.TypeArray) && p.Items != nil {
			out = append(out, bodyField{prefix + name + "[]", p.Items.Value, func(b map[string]any, v any) { b[name] = []any{v} }})
		}
	}
	return out
}

// paramSchema is a parameter's schema, and whether its value is sent as
// JSON text (content application/json).
func paramSchema(p *openapi3.Parameter) (*openapi3.Schema, bool) {
	if p.Schema != nil {
		return p.Schema.Value, false
	}
	return p.Content.Get("application/json").Schema.Value, true
}

// paramText is a parameter value as sent.
func paramText(v any, jsonText bool) string {
	if s, ok := v.(string); ok && !jsonText {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// visit validates v against s as a client's validator would: JSON Schema
// 2020-12 (if/then, not, patterns) and kin-openapi's own checks, which
// assert the formats.
func visit(s *openapi3.Schema, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return err
	}
	if err := inlined(s).VisitJSON(generic, openapi3.EnableJSONSchema2020()); err != nil {
		return err
	}
	return s.VisitJSON(generic)
}

// inlinedSchemas are the schemas visit has inlined (a bounds run visits
// the same schemas many times).
var inlinedSchemas sync.Map // *openapi3.Schema -> *openapi3.Schema

// inlined is a copy of s with its references resolved in place (each
// SchemaRef's $ref dropped, its loaded value kept). kin-openapi's JSON
// Schema 2020-12 validator compiles the schema alone, without the
// document: a $ref to a component does not compile, and kin-openapi then
// falls back silently to its own validator, which ignores if/then/else
// (a zone body without its kind's geometry passed).
func inlined(s *openapi3.Schema) *openapi3.Schema {
	if c, ok := inlinedSchemas.Load(s); ok {
		return c.(*openapi3.Schema)
	}
	c := inlineSchema(s, map[*openapi3.Schema]*openapi3.Schema{})
	inlinedSchemas.Store(s, c)
	return c
}

func inlineSchema(s *openapi3.Schema, seen map[*openapi3.Schema]*openapi3.Schema) *openapi3.Schema {
	if s == nil {
		return nil
	}
	if c, ok := seen[s]; ok {
		return c
	}
	c := new(openapi3.Schema)
	*c = *s
	seen[s] = c
	ref := func(r *openapi3.SchemaRef) *openapi3.SchemaRef {
		if r == nil {
			return nil
		}
		return &openapi3.SchemaRef{Value: inlineSchema(r.Value, seen)}
	}
	refs := func(rs openapi3.SchemaRefs) openapi3.SchemaRefs {
		if rs == nil {
			return nil
		}
		out := make(openapi3.SchemaRefs, len(rs))
		for i, r := range rs {
			out[i] = ref(r)
		}
		return out
	}
	schemas := func(m openapi3.Schemas) openapi3.Schemas {
		if m == nil {
			return nil
		}
		out := make(openapi3.Schemas, len(m))
		for k, r := range m {
			out[k] = ref(r)
		}
		return out
	}
	c.OneOf, c.AnyOf, c.AllOf, c.PrefixItems = refs(s.OneOf), refs(s.AnyOf), refs(s.AllOf), refs(s.PrefixItems)
	c.Not, c.Items, c.Contains, c.PropertyNames = ref(s.Not), ref(s.Items), ref(s.Contains), ref(s.PropertyNames)
	c.If, c.Then, c.Else, c.ContentSchema = ref(s.If), ref(s.Then), ref(s.Else), ref(s.ContentSchema)
	c.Properties, c.PatternProperties = schemas(s.Properties), schemas(s.PatternProperties)
	c.DependentSchemas, c.Defs = schemas(s.DependentSchemas), schemas(s.Defs)
	c.AdditionalProperties.Schema = ref(s.AdditionalProperties.Schema)
	return c
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 60 {
		return fmt.Sprintf("%s… (%d bytes)", b[:40], len(b))
	}
	return string(b)
}

// boundGen makes the values at the bounds of a schema. Strings are unique
// across the test (a username, an IMEI or an Idempotency-Key is sent
// once).
type boundGen struct {
	used     map[string]bool
	patterns map[string]*regexp.Regexp
}

// matches reports whether v has s's length and pattern (the whole value
// is validated against the document before it is sent).
func (g *boundGen) matches(s *openapi3.Schema, v string) bool {
	n := uint64(len([]rune(v)))
	if n < s.MinLength || s.MaxLength != nil && n > *s.MaxLength {
		return false
	}
	if s.Pattern == "" {
		return true
	}
	re, ok := g.patterns[s.Pattern]
	if !ok {
		re = regexp.MustCompile(s.Pattern)
		g.patterns[s.Pattern] = re
	}
	return re.MatchString(v)
}

// bounds returns the values s allows at its bounds, and the hard values
// it allows: an integer without a maximum at the largest integer of its
// format, a string without maxLength long, blank, with NUL or invisible
// characters, a date of the year 0000, a timestamp past the microsecond
// or out of PostgreSQL's offsets, a list without uniqueItems with a value
// twice. A rule the server enforces and the schema forgets shows as one
// of these refused.
func (g *boundGen) bounds(t *testing.T, what string, s *openapi3.Schema, body, unique bool) []any {
	t.Helper()
	var out []any
	if s.Type.Includes(openapi3.TypeNull) {
		out = append(out, nil)
	}
	if len(s.Enum) > 0 {
		return append(out, s.Enum...)
	}
	allowed := func(vs ...any) {
		for _, v := range vs {
			if visit(s, v) == nil {
				out = append(out, v)
			}
		}
	}
	switch {
	case s.Type.Includes(openapi3.TypeInteger):
		lo, hi := json.Number("-9007199254740991"), json.Number("9007199254740991") // ±(2^53-1): any JSON reader's integers
		switch s.Format {
		case "int64":
			lo, hi = json.Number(strconv.FormatInt(math.MinInt64, 10)), json.Number(strconv.FormatInt(math.MaxInt64, 10))
		case "int32":
			lo, hi = json.Number(strconv.FormatInt(math.MinInt32, 10)), json.Number(strconv.FormatInt(math.MaxInt32, 10))
		}
		if s.Min != nil {
			lo = exactInt(*s.Min)
		}
		if s.Max != nil {
			hi = exactInt(*s.Max)
		}
		out = append(out, lo, hi)
	case s.Type.Includes(openapi3.TypeNumber):
		// a number (a zone's coordinates and radius): its bounds, and the
		// largest finite float64 where it has none
		lo, hi := -math.MaxFloat64, math.MaxFloat64
		if s.Min != nil {
			lo = *s.Min
		}
		if s.Max != nil {
			hi = *s.Max
		}
		out = append(out, lo, hi)
	case s.Type.Includes(openapi3.TypeBoolean):
		out = append(out, true, false)
	case s.Type.Includes(openapi3.TypeString):
		switch s.Format {
		case "date":
			out = append(out, "0001-01-01", "9999-12-31")
			allowed("0000-01-01")
		case "date-time":
			out = append(out, "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z")
			allowed("0000-01-01T00:00:00Z", "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00",
				"2999-01-01T00:00:00.1234567Z", "2999-01-01t00:00:00z", "2999-01-01T00:00:60Z", "2999-01-01T00:00:00+16:00")
		default:
			out = append(out, g.text(t, what, s, int(s.MinLength)))
			if s.MaxLength != nil {
				out = append(out, g.text(t, what, s, int(*s.MaxLength)))
			} else {
				long := 2000 // a query's value; a body's is longer
				if body {
					long = 10000
				}
				allowed(g.text(t, what, s, long))
			}
			for _, hard := range []string{" ", "  ", "\t\n", "\x00", "a\x00b", "\u200b", "\u0301\u0301", "\u3164", "\U000e0001",
				`"a b"@example.com`, "a@[127.0.0.1]", "a@b"} {
				if !unique {
					allowed(hard)
				} else if !g.used[hard] && visit(s, hard) == nil {
					g.used[hard] = true // a header's value (an Idempotency-Key) is sent once
					out = append(out, hard)
				}
			}
		}
	case s.Type.Includes(openapi3.TypeArray):
		out = append(out, []any{})
		if s.MaxItems != nil {
			out = append(out, g.items(t, what, s, int(*s.MaxItems)))
		} else {
			allowed(g.items(t, what, s, 100))
		}
		if !s.UniqueItems {
			first := g.items(t, what, s, 1)
			allowed(append(first, first...))
		}
	case s.Type.Includes(openapi3.TypeObject):
		if len(s.Properties) == 0 {
			out = append(out, map[string]any{}, map[string]any{"from": "08:00", "to": "18:00"})
			allowed(map[string]any{"a": "\x00"}, map[string]any{"\x00": 1}, map[string]any{"a": map[string]any{"b": "\x00"}},
				map[string]any{"a": []any{"\x00"}})
		}
		// An object's properties are fields of their own (bodyFields).
	default:
		t.Fatalf("%s: no bounds for type %v", what, s.Type)
	}
	return out
}

// items is a list of n values of s's items, unique when s says so: every
// enum member when there are fewer.
func (g *boundGen) items(t *testing.T, what string, s *openapi3.Schema, n int) []any {
	it := s.Items.Value
	if len(it.Enum) > 0 {
		if !s.UniqueItems {
			return slices.Repeat([]any{it.Enum[0]}, n)
		}
		return slices.Clone(it.Enum)[:min(n, len(it.Enum))]
	}
	out := make([]any, n)
	for i := range out {
		out[i] = g.text(t, what, it, max(int(it.MinLength), 12))
	}
	return out
}

// textAttempts bounds the numbers text tries: a pattern none of its
// candidates matches fails the test instead of looping (62^length
// numbers).
const textAttempts = 200_000

// text is a string of length runes that s allows and the test has not
// sent before: the base-62 digits of a number padded with "a", a time of
// day, a colour "#rrggbb", or an e-mail address of that length when the
// pattern wants one.
func (g *boundGen) text(t *testing.T, what string, s *openapi3.Schema, length int) string {
	t.Helper()
	if length == 0 && g.matches(s, "") {
		return ""
	}
	const digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	for k := 0; k < textAttempts; k++ {
		id := ""
		for r := k; ; r /= len(digits) {
			id = string(digits[r%len(digits)]) + id
			if r < len(digits) {
				break
			}
		}
		if len(id) > length {
			break
		}
		candidates := []string{strings.Repeat("a", length-len(id)) + id, fmt.Sprintf("%02d:%02d", k/60%24, k%60),
			fmt.Sprintf("#%06x", k%0x1000000), fmt.Sprintf("#%06X", k%0x1000000)}
		if length >= 6+len(id) {
			candidates = append(candidates, emailOfLength(min(64, length-10), length, id))
		}
		for _, c := range candidates {
			if len([]rune(c)) == length && !g.used[c] && g.matches(s, c) {
				g.used[c] = true
				return c
			}
		}
	}
	t.Fatalf("%s: no string of %d characters matches %q (format %q) in %d attempts: teach boundGen.text one",
		what, length, s.Pattern, s.Format, textAttempts)
	return ""
}

// emailOfLength is an address of exactly length characters: a local part
// of local characters ending in id, "@", labels of at most 63 letters
// ending in ".example".
func emailOfLength(local, length int, id string) string {
	l := strings.Repeat("a", max(local-len(id), 0)) + id
	domainLen := length - len(l) - 1
	if domainLen < len(".example")+1 {
		return ""
	}
	labels := domainLen - len(".example")
	var d []string
	for labels > 0 {
		k := min(labels, 63)
		if labels-k == 1 || (labels > 63 && labels-k < 2) {
			k = labels - 2 // never a label of 0 characters after a dot
		}
		d = append(d, strings.Repeat("b", k))
		labels -= k + 1
	}
	return l + "@" + strings.Join(d, ".") + ".example"
}

// exactInt is the integer f as a JSON number written in full (9223372036854774784,
// not 9.223372036854775e+18).
func exactInt(f float64) json.Number {
	return json.Number(strconv.FormatFloat(f, 'f', 0, 64))
}
