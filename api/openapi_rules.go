package api

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// The rules the server enforces on a parameter or a body field, stated as
// JSON Schema so that a tool that reads only the document (a client's
// validation, a generator of requests) sends nothing the server refuses
// for a rule the descriptions alone state (issue 34). Each is made from the
// declaration the server validates with. What no JSON Schema can say stays
// in the descriptions: rules relative to the time of the request
// (expires_at in the future, GET /usage's default to), between query
// parameters (from not after to, after with its sort), about stored data
// (a unique name, a reference that exists, the target account's type) and
// server-made values (the after cursor's checksum) — docs/decisions.md,
// "The schema states every rule it can".
//
// The patterns keep to the tokens JSON Schema advises for portable regular
// expressions (literal characters, classes and ranges, \xHH, groups,
// alternation, quantifiers): no \p{...}, \s or \d, whose meaning differs
// between ECMA-262, Go and Python; a set of characters is spelt out from
// the Unicode tables the server's own check reads.

// maxInt64Float is the largest int64 a float64 holds exactly
// (2^63 - 1024): the maximum of an int64 field, as JSON numbers of the
// document are float64s (math.MaxInt64 would be written 2^63, one past
// the bound, and a generator would send it).
const maxInt64Float = float64(1<<63 - 1024)

// noNULPattern: a string the server stores or compares as PostgreSQL text
// holds no NUL (storable, textFault).
const noNULPattern = `^[^\x00]*$`

// charClass renders the characters of tables and extra in the Basic
// Multilingual Plane as the body of a regular expression class: ranges of
// \xHH up to U+00FF, literal characters above (none of them is special in
// a class). Characters beyond U+FFFF are left out: without ECMA-262's u
// flag (which Spectral and others do not set) a class cannot hold them
// (each is two UTF-16 code units), so a class of "blank" characters
// counts them as showing, and a name made only of the few astral
// combining marks and format characters passes the pattern but not the
// server (docs/decisions.md).
func charClass(tables []*unicode.RangeTable, extra ...rune) string {
	type span struct{ lo, hi rune }
	var spans []span
	for _, t := range tables {
		for _, r := range t.R16 {
			for c := rune(r.Lo); c <= rune(r.Hi); c += rune(r.Stride) {
				spans = append(spans, span{c, c})
			}
		}
	}
	for _, c := range extra {
		if c <= 0xffff {
			spans = append(spans, span{c, c})
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return int(a.lo - b.lo) })
	var merged []span
	for _, s := range spans {
		if n := len(merged); n > 0 && s.lo <= merged[n-1].hi+1 {
			merged[n-1].hi = max(merged[n-1].hi, s.hi)
			continue
		}
		merged = append(merged, s)
	}
	var b strings.Builder
	char := func(c rune) {
		if c <= 0xff {
			fmt.Fprintf(&b, `\x%02x`, c)
			return
		}
		b.WriteRune(c)
	}
	for _, s := range merged {
		char(s.lo)
		if s.hi > s.lo {
			if s.hi > s.lo+1 {
				b.WriteByte('-')
			}
			char(s.hi)
		}
	}
	return b.String()
}

// table is a range table of the runes from lo to hi (in the Basic
// Multilingual Plane), for charClass.
func table(lo, hi rune) *unicode.RangeTable {
	return &unicode.RangeTable{R16: []unicode.Range16{{Lo: uint16(lo), Hi: uint16(hi), Stride: 1}}}
}

// showingPattern: no character of never anywhere, and at least n
// characters outside blank and never (a name that must show n characters
// once blank ones are trimmed).
func showingPattern(n int, never, blank []*unicode.RangeTable, blankExtra ...rune) string {
	anyChar := "[^" + charClass(never) + "]*"
	shows := "[^" + charClass(append(slices.Clone(never), blank...), blankExtra...) + "]"
	return "^" + anyChar + strings.Repeat(shows+anyChar, n) + "$"
}

// nul is the NUL character, never in a stored string.
func nul() []*unicode.RangeTable { return []*unicode.RangeTable{table(0, 0)} }

// searchPattern: search is 2 or more characters once trimmed of Unicode
// whitespace (strings.TrimSpace), without NUL.
func searchPattern() string {
	return showingPattern(minSearch, nul(), []*unicode.RangeTable{unicode.White_Space})
}

// tokenNamePattern: a token's name has no control character
// (tokenNameControls) and is not blank (strings.TrimSpace).
func tokenNamePattern() string {
	return showingPattern(1, []*unicode.RangeTable{tokenNameControls()}, []*unicode.RangeTable{unicode.White_Space})
}

// passengerNamePattern: a passenger's name shows a character
// (storage.InvisibleText), without NUL.
func passengerNamePattern() string {
	tables, fillers := storage.InvisibleText()
	return showingPattern(1, nul(), tables, fillers...)
}

// yearPattern is a four-digit year from storage.MinYear (0001) on: not
// 0000.
const yearPattern = `([0-9]{3}[1-9]|[0-9]{2}[1-9][0-9]|[0-9][1-9][0-9]{2}|[1-9][0-9]{3})`

// datePattern is storage.ParseDate's form: YYYY-MM-DD from 0001-01-01
// (format date says which days exist).
const datePattern = `^` + yearPattern + `-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$`

// clockPattern is HH:MM:SS without 24:00 or a leap second.
const clockPattern = `([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]`

// timestampPattern is storage.ParseTimestamp's form: seconds always, at
// most six fractional digits, upper-case T and Z, an offset up to ±15:59.
const timestampPattern = `^` + yearPattern + `-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T` + clockPattern +
	`(\.[0-9]{1,6})?(Z|[+-](0[0-9]|1[0-5]):[0-5][0-9])$`

// timestampOutOfRange is what timestampPattern lets through that
// storage.ParseTimestamp refuses, and a little more: an instant of
// 0001-01-01 or 9999-12-31 written with an offset that moves it, in UTC,
// out of the years 0001–9999.
const timestampOutOfRange = `^0001-01-01T[^Z]*\+|^9999-12-31T[^Z]*-[0-9]{2}:[0-9]{2}$`

// expiryPattern is what POST /tokens takes as expires_at
// (time.Parse(time.RFC3339Nano), a year up to 9999 in UTC): upper-case T
// and Z, seconds always, up to nine fractional digits.
const expiryPattern = `^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T` + clockPattern +
	`(\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`

// expiryPastMaxYear is what expiryPattern lets through in the year 10000
// in UTC: the last day of 9999 with a negative offset (a little more).
const expiryPastMaxYear = `^9999-12-31T[^Z]*-[0-9]{2}:[0-9]{2}$`

// expirySchema states POST /tokens' rule of expires_at on s (but being
// in the future, relative to the time of the request).
func expirySchema(s *openapi3.Schema) {
	s.WithFormat("date-time").WithPattern(expiryPattern)
	s.Not = openapi3.NewSchemaRef("", openapi3.NewStringSchema().WithPattern(expiryPastMaxYear))
}

// emailPattern is storage.ValidEmail's form (net/mail's addr-spec that is
// the whole string, RFC 6532 characters included), or empty: a dot-atom,
// "@", a dot-atom. Quoted local parts and domain literals, which
// ValidEmail takes only in some spellings, are left out.
func emailPattern() string {
	atext := "[^" + charClass([]*unicode.RangeTable{table(0, ' '), table(0x7f, 0x7f)}, '"', '(', ')', ',', '.', ':', ';', '<', '>', '@', '[', '\\', ']') + "]+"
	dotAtom := atext + `(\.` + atext + `)*`
	return "^(" + dotAtom + "@" + dotAtom + ")?$"
}

// permissionValues are the permissions tenancy.ValidatePermission takes,
// the enumeration of a token's permissions: "*", "METHOD *" for each
// method of a route, and every route.
func permissionValues() []string {
	out := []string{"*"}
	var routes []string
	for _, r := range tenancy.Routes() {
		if all := r.Method + " *"; !slices.Contains(out, all) {
			out = append(out, all)
		}
		routes = append(routes, r.String())
	}
	return append(out, routes...)
}

// timestampSchema states storage.ParseTimestamp's rule on s.
func timestampSchema(s *openapi3.Schema) {
	s.WithFormat("date-time").WithPattern(timestampPattern)
	s.Not = openapi3.NewSchemaRef("", openapi3.NewStringSchema().WithPattern(timestampOutOfRange))
}

// dateSchema states storage.ParseDate's rule on s.
func dateSchema(s *openapi3.Schema) { s.WithFormat("date").WithPattern(datePattern) }

// inputRules completes the schema s of a parameter or of a request body
// (and what it holds) with the rules every input has: a string without
// an enumeration, pattern or format holds no NUL; an int64 has the
// largest maximum a document can write exactly.
func inputRules(s *openapi3.Schema) {
	if s == nil {
		return
	}
	switch {
	case s.Type.Includes(openapi3.TypeString) && len(s.Enum) == 0 && s.Pattern == "" && s.Format == "":
		s.Pattern = noNULPattern
	case s.Type.Includes(openapi3.TypeInteger) && s.Format == "int64" && s.Max == nil:
		m := maxInt64Float
		s.Max = &m
	}
	for _, p := range s.Properties {
		if p.Value != nil {
			inputRules(p.Value)
		}
	}
	if s.Items != nil && s.Items.Value != nil {
		inputRules(s.Items.Value)
	}
}
