package rules

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxParamName and MaxParamValue bound a param rule's NAME (an attribute
// name of a reading: at most 64 characters) and VALUE (an attribute's
// string: at most 256 characters).
const (
	MaxParamName  = 64
	MaxParamValue = 256
)

// paramOps are the operators of a param rule, the two-character ones first
// so that ">=" is not read as ">" followed by "=5".
var paramOps = []string{">=", "<=", "!=", ">", "<", "="}

// paramExpr is a parsed param checked_value: NAME OP VALUE. text is VALUE
// as written (unquoted); num its number when VALUE is an unquoted number.
type paramExpr struct {
	name, op string
	text     string
	num      float64
	isNum    bool
}

// parseParam parses "NAME OP VALUE" (docs/decisions.md "Rules in force"):
// surrounding space is ignored and space around OP optional; NAME is 1..64
// characters, none of them space or one of < > = ! "; OP is one of > < >=
// <= = !=; VALUE is the rest, 1..256 characters: "..." (quotes around it,
// none inside) is always a string, possibly empty; an unquoted VALUE that
// is a decimal number is a number, otherwise a string (inner spaces kept),
// and it may not begin with an operator's character (so "a == 1" is
// refused, not read as VALUE "= 1") nor hold a quote.
func parseParam(cv string) (paramExpr, string) {
	var e paramExpr
	bad := func(why string) (paramExpr, string) {
		return paramExpr{}, fmt.Sprintf("checked_value %q is not NAME OP VALUE: %s", cv, why)
	}
	if !utf8.ValidString(cv) {
		return paramExpr{}, "checked_value is not valid UTF-8"
	}
	s := strings.TrimSpace(cv)
	end := strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(`<>=!"`, r) })
	if end < 0 {
		end = len(s)
	}
	e.name, s = s[:end], strings.TrimLeftFunc(s[end:], unicode.IsSpace)
	if e.name == "" {
		return bad("no attribute NAME before the operator")
	}
	if n := utf8.RuneCountInString(e.name); n > MaxParamName {
		return bad(fmt.Sprintf("NAME is %d characters, at most %d", n, MaxParamName))
	}
	for _, op := range paramOps {
		if strings.HasPrefix(s, op) {
			e.op, s = op, strings.TrimLeftFunc(s[len(op):], unicode.IsSpace)
			break
		}
	}
	if e.op == "" {
		return bad("no operator (one of > < >= <= = !=) after NAME")
	}
	switch {
	case s == "":
		return bad("no VALUE after the operator")
	case s[0] == '"':
		if len(s) < 2 || s[len(s)-1] != '"' || strings.Contains(s[1:len(s)-1], `"`) {
			return bad(`a quoted VALUE is "..." with no quote inside`)
		}
		e.text = s[1 : len(s)-1]
	case strings.ContainsRune("<>=!", rune(s[0])):
		return bad(fmt.Sprintf("VALUE begins with %q: one operator only (= not ==)", s[:1]))
	case strings.Contains(s, `"`):
		return bad(`a quoted VALUE is "..." with no quote inside`)
	default:
		e.text = s
		e.num, e.isNum = parseNumber(s)
	}
	if n := utf8.RuneCountInString(e.text); n > MaxParamValue {
		return bad(fmt.Sprintf("VALUE is %d characters, at most %d", n, MaxParamValue))
	}
	return e, ""
}

// eval compares an attribute's value with VALUE: known is false for a
// value that is neither number, bool nor string. Numbers compare as numbers
// when both sides are (an attribute's numeric string counts as a number);
// otherwise both sides compare as strings, byte by byte (a bool is "true"
// or "false", a number as formatNumber writes it).
func (e paramExpr) eval(v any) (holds, known bool) {
	if e.isNum {
		if a, ok := attrNumber(v); ok {
			return compare(e.op, cmpNumbers(a, e.num)), true
		}
	}
	var a string
	switch x := v.(type) {
	case string:
		a = x
	case bool:
		a = fmt.Sprint(x)
	case float64:
		n, ok := attrNumber(x)
		if !ok {
			return false, false
		}
		a = formatNumber(n)
	default:
		return false, false
	}
	return compare(e.op, strings.Compare(a, e.text)), true
}

// cmpNumbers is -1, 0 or 1 as a is less than, equal to or more than b.
func cmpNumbers(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compare applies op to the result c of a three-way comparison.
func compare(op string, c int) bool {
	switch op {
	case ">":
		return c > 0
	case "<":
		return c < 0
	case ">=":
		return c >= 0
	case "<=":
		return c <= 0
	case "=":
		return c == 0
	case "!=":
		return c != 0
	}
	return false
}
