package main

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/tenancy"
)

// apiGuideTemplate is the hand-written prose of docs/api.md: conventions
// (envelopes, authentication, rate limits, paging, search), examples
// captured from a running server and the error table. apiGuide puts the
// parts generated from the OpenAPI document in its markers.
//
//go:embed apiguide.md
var apiGuideTemplate string

// The markers of apiGuideTemplate.
const (
	// endpointsMarker is replaced by the table of every operation.
	endpointsMarker = "<!-- generated: endpoints -->\n"
	// operationsMarker is replaced by one section per operation.
	operationsMarker = "<!-- generated: operations -->\n"
)

// notesMarker opens the hand-written notes of one operation in the
// template ("<!-- notes GET /me -->"); they run to the next notes marker
// or to the end of the notes block (notesEnd), and follow the generated
// reference of their operation.
var notesMarker = regexp.MustCompile(`(?m)^<!-- notes ([A-Z]+) (\S+) -->\n`)

const notesEnd = "<!-- end of notes -->\n"

// oaDoc is the part of the OpenAPI document the guide reads.
type oaDoc struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas   map[string]*oaSchema   `json:"schemas"`
		Responses map[string]*oaResponse `json:"responses"`
	} `json:"components"`
}

type oaOperation struct {
	OperationID string        `json:"operationId"`
	Summary     string        `json:"summary"`
	Description string        `json:"description"`
	Tags        []string      `json:"tags"`
	Parameters  []oaParameter `json:"parameters"`
	RequestBody *struct {
		Description string                                `json:"description"`
		Required    bool                                  `json:"required"`
		Content     map[string]struct{ Schema *oaSchema } `json:"content"`
	} `json:"requestBody"`
	Responses map[string]*oaResponse `json:"responses"`
}

type oaParameter struct {
	Name        string                                `json:"name"`
	In          string                                `json:"in"`
	Description string                                `json:"description"`
	Required    bool                                  `json:"required"`
	Schema      *oaSchema                             `json:"schema"`
	Content     map[string]struct{ Schema *oaSchema } `json:"content"`
}

// paramType renders a parameter's type: its schema's, or for a
// parameter whose value is a JSON text (content), the content's schema
// and its media type.
func paramType(d *oaDoc, p oaParameter) string {
	for _, ct := range slices.Sorted(maps.Keys(p.Content)) {
		return typeOf(d, p.Content[ct].Schema) + ", as " + ct + " text"
	}
	return typeOf(d, p.Schema)
}

type oaResponse struct {
	Ref         string                                `json:"$ref"`
	Description string                                `json:"description"`
	Content     map[string]struct{ Schema *oaSchema } `json:"content"`
}

type oaSchema struct {
	Ref         string               `json:"$ref"`
	Type        any                  `json:"type"`
	Format      string               `json:"format"`
	Description string               `json:"description"`
	Enum        []any                `json:"enum"`
	Items       *oaSchema            `json:"items"`
	AnyOf       []*oaSchema          `json:"anyOf"`
	OneOf       []*oaSchema          `json:"oneOf"`
	Properties  map[string]*oaSchema `json:"properties"`
	Required    []string             `json:"required"`
	Minimum     *float64             `json:"minimum"`
	Maximum     *float64             `json:"maximum"`
	MinLength   *int                 `json:"minLength"`
	MaxLength   *int                 `json:"maxLength"`
	Default     any                  `json:"default"`
}

// apiGuide renders docs/api.md from the OpenAPI document doc and the
// server's error table: the template with the table of every operation,
// one section per operation (permission, parameters, body, responses and
// their error codes, then the template's notes on it) and a check that the
// template's error table names every code. It fails when the template
// has notes for an operation the document lacks, or misses a code.
func apiGuide(doc []byte, codes []api.ErrorCode) ([]byte, error) {
	var d oaDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("api guide: %w", err)
	}
	type op struct {
		method, path string
		o            oaOperation
	}
	var ops []op
	for path, items := range d.Paths {
		for method, raw := range items {
			var o oaOperation
			if err := json.Unmarshal(raw, &o); err != nil || o.OperationID == "" {
				continue
			}
			ops = append(ops, op{strings.ToUpper(method), path, o})
		}
	}
	order := map[string]int{}
	for i, r := range tenancy.Routes() {
		order[r.String()] = i + 1
	}
	slices.SortFunc(ops, func(a, b op) int {
		ka, kb := order[a.method+" "+a.path], order[b.method+" "+b.path]
		if ka == 0 {
			ka = len(order) + 1
		}
		if kb == 0 {
			kb = len(order) + 1
		}
		if ka != kb {
			return ka - kb
		}
		return strings.Compare(a.method+" "+a.path, b.method+" "+b.path)
	})

	tmpl := apiGuideTemplate
	for _, c := range codes {
		if !strings.Contains(tmpl, "| `"+c.Code+"` |") {
			return nil, fmt.Errorf("api guide: the error table of the template (cmd/fleetapi/apiguide.md, §8) has no row for %s", c.Code)
		}
	}
	notes, tmpl, err := cutNotes(tmpl)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	var table, sections strings.Builder
	table.WriteString("| Method | Path | Purpose | Token permission needed |\n|---|---|---|---|\n")
	for i, o := range ops {
		key := o.method + " " + o.path
		known[key] = true
		fmt.Fprintf(&table, "| %s | [`%s`](#%s) | %s | %s |\n", o.method, o.path, anchor(i+1, key), cell(o.o.Summary), permissionOf(key))
		fmt.Fprintf(&sections, "### 7.%d %s\n\n", i+1, key)
		writeOperation(&sections, &d, key, o.o, codes)
		if n := notes[key]; n != "" {
			sections.WriteString(strings.TrimPrefix(n, "\n"))
			if !strings.HasSuffix(n, "\n\n") {
				sections.WriteString("\n")
			}
		}
	}
	for key := range notes {
		if !known[key] {
			return nil, fmt.Errorf("api guide: the template has notes on %s, which the OpenAPI document does not have", key)
		}
	}
	for _, m := range []string{endpointsMarker, operationsMarker} {
		if strings.Count(tmpl, m) != 1 {
			return nil, fmt.Errorf("api guide: the template needs the marker %q once", m)
		}
	}
	out := strings.Replace(tmpl, endpointsMarker, table.String(), 1)
	out = strings.Replace(out, operationsMarker, sections.String(), 1)
	return []byte(out), nil
}

// cutNotes takes the notes blocks out of the template: the notes by
// operation, and the template without them.
func cutNotes(tmpl string) (map[string]string, string, error) {
	notes := map[string]string{}
	for {
		loc := notesMarker.FindStringSubmatchIndex(tmpl)
		if loc == nil {
			return notes, tmpl, nil
		}
		key := tmpl[loc[2]:loc[3]] + " " + tmpl[loc[4]:loc[5]]
		rest := tmpl[loc[1]:]
		end := len(rest)
		cut := len(rest)
		if next := notesMarker.FindStringIndex(rest); next != nil {
			end, cut = next[0], next[0]
		}
		if e := strings.Index(rest, notesEnd); e >= 0 && e < end {
			end, cut = e, e+len(notesEnd)
		}
		if _, dup := notes[key]; dup {
			return nil, "", fmt.Errorf("api guide: notes on %s twice", key)
		}
		notes[key] = rest[:end]
		tmpl = tmpl[:loc[0]] + rest[cut:]
	}
}

// anchor is the GitHub anchor of the heading "7.n METHOD /path".
func anchor(n int, key string) string {
	s := strings.ToLower(fmt.Sprintf("7%d %s", n, key))
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// permissionOf says which token permission the route needs (docs/design.md §3).
func permissionOf(key string) string {
	if key == "GET /me" {
		return "none (any valid token)"
	}
	s := "`" + key + "`"
	if !strings.HasPrefix(key, "GET ") {
		s += ", and an account that is not read-only"
	}
	return s
}

// writeOperation writes the generated reference of one operation.
func writeOperation(b *strings.Builder, d *oaDoc, key string, o oaOperation, codes []api.ErrorCode) {
	fmt.Fprintf(b, "**%s** (`%s`", strings.TrimSuffix(o.Summary, "."), o.OperationID)
	if len(o.Tags) > 0 {
		fmt.Fprintf(b, ", tag %s", strings.Join(o.Tags, ", "))
	}
	b.WriteString(")\n\n")
	if o.Description != "" {
		b.WriteString(o.Description + "\n\n")
	}
	fmt.Fprintf(b, "- **Permission:** %s.\n", permissionOf(key))
	if len(o.Parameters) == 0 {
		b.WriteString("- **Parameters:** none (any query parameter is `400 INVALID_PARAMETER`).\n")
	} else {
		b.WriteString("- **Parameters:**\n\n  | Name | In | Type | Required | Description |\n  |---|---|---|---|---|\n")
		for _, p := range o.Parameters {
			fmt.Fprintf(b, "  | `%s` | %s | %s | %s | %s |\n", p.Name, p.In, cell(paramType(d, p)), yesNo(p.Required), cell(p.Description))
		}
		b.WriteString("\n")
	}
	if rb := o.RequestBody; rb != nil {
		for _, ct := range slices.Sorted(maps.Keys(rb.Content)) {
			s := rb.Content[ct].Schema
			fmt.Fprintf(b, "- **Request body** (`%s`, %s): %s%s\n", ct, map[bool]string{true: "required", false: "optional"}[rb.Required], typeOf(d, s), sentence(rb.Description))
			writeFields(b, d, s)
		}
	} else {
		b.WriteString("- **Request body:** none.\n")
	}
	b.WriteString("- **Responses:**\n\n  | Status | Body | Meaning |\n  |---|---|---|\n")
	for _, st := range slices.SortedFunc(maps.Keys(o.Responses), func(a, b string) int { return strings.Compare(a, b) }) {
		r := resolveResponse(d, o.Responses[st])
		body := "—"
		for _, ct := range slices.Sorted(maps.Keys(r.Content)) {
			body = typeOf(d, r.Content[ct].Schema)
		}
		meaning := r.Description
		if n, _ := strconv.Atoi(st); n >= 400 {
			var cs []string
			for _, c := range codes {
				if c.Status == n && (strings.Contains(r.Description, c.Code) || strings.Contains(o.Description, c.Code)) {
					cs = append(cs, "`"+c.Code+"`")
				}
			}
			if len(cs) > 0 {
				meaning = strings.Join(cs, ", ") + " (§8)"
			}
		}
		fmt.Fprintf(b, "  | %s | %s | %s |\n", st, cell(body), cell(meaning))
	}
	b.WriteString("\n")
}

// writeFields writes the fields of an object schema (through its $ref)
// as a nested table.
func writeFields(b *strings.Builder, d *oaDoc, s *oaSchema) {
	s = resolve(d, s)
	if s == nil || len(s.Properties) == 0 {
		b.WriteString("\n")
		return
	}
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	b.WriteString("\n  | Field | Type | Required | Description |\n  |---|---|---|---|\n")
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		p := s.Properties[name]
		fmt.Fprintf(b, "  | `%s` | %s | %s | %s |\n", name, cell(typeOf(d, p)), yesNo(req[name]), cell(resolveDescription(d, p)))
	}
	b.WriteString("\n")
}

func resolve(d *oaDoc, s *oaSchema) *oaSchema {
	for i := 0; s != nil && s.Ref != "" && i < 8; i++ {
		s = d.Components.Schemas[strings.TrimPrefix(s.Ref, "#/components/schemas/")]
	}
	return s
}

func resolveDescription(d *oaDoc, s *oaSchema) string {
	if s.Description != "" {
		return s.Description
	}
	if r := resolve(d, s); r != nil {
		return r.Description
	}
	return ""
}

func resolveResponse(d *oaDoc, r *oaResponse) *oaResponse {
	if r.Ref != "" {
		if c := d.Components.Responses[strings.TrimPrefix(r.Ref, "#/components/responses/")]; c != nil {
			return c
		}
	}
	return r
}

// typeOf renders a schema's type for people: a component by name, an
// array of items, alternatives joined by " or ", bounds and enumerations.
func typeOf(d *oaDoc, s *oaSchema) string {
	if s == nil {
		return "any"
	}
	if s.Ref != "" {
		return strings.TrimPrefix(s.Ref, "#/components/schemas/")
	}
	var alts []*oaSchema
	alts = append(alts, s.AnyOf...)
	alts = append(alts, s.OneOf...)
	if len(alts) > 0 {
		parts := make([]string, len(alts))
		for i, a := range alts {
			parts[i] = typeOf(d, a)
		}
		return strings.Join(parts, " or ")
	}
	var t string
	switch v := s.Type.(type) {
	case string:
		t = v
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = fmt.Sprint(x)
		}
		t = strings.Join(parts, " or ")
	default:
		t = "any"
	}
	if t == "array" {
		t = "array of " + typeOf(d, s.Items)
	}
	if s.Format != "" {
		t += " (" + s.Format + ")"
	}
	var notes []string
	if len(s.Enum) > 0 {
		vals := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			vals[i] = fmt.Sprint(e)
		}
		notes = append(notes, "one of "+strings.Join(vals, ", "))
	}
	if s.Minimum != nil {
		notes = append(notes, "≥ "+strconv.FormatFloat(*s.Minimum, 'f', -1, 64))
	}
	if s.Maximum != nil {
		notes = append(notes, "≤ "+strconv.FormatFloat(*s.Maximum, 'f', -1, 64))
	}
	if s.MinLength != nil || s.MaxLength != nil {
		lo, hi := 0, -1
		if s.MinLength != nil {
			lo = *s.MinLength
		}
		if s.MaxLength != nil {
			hi = *s.MaxLength
		}
		if hi >= 0 {
			notes = append(notes, fmt.Sprintf("%d–%d characters", lo, hi))
		} else {
			notes = append(notes, fmt.Sprintf("at least %d characters", lo))
		}
	}
	if s.Default != nil {
		notes = append(notes, fmt.Sprintf("default %v", s.Default))
	}
	if len(notes) > 0 {
		t += "; " + strings.Join(notes, "; ")
	}
	return t
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// cell makes text fit one Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", "\\|")
}

func sentence(s string) string {
	if s == "" {
		return "."
	}
	return ". " + s
}
