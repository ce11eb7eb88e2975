package api

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// noParams rejects any query parameter on a route that takes none (a
// mistyped parameter must not be silently ignored), and a query string
// that does not parse (parseQuery).
func noParams(rawQuery string) error {
	q, err := parseQuery(rawQuery)
	if err != nil {
		return err
	}
	if len(q) == 0 {
		return nil
	}
	return invalidParam(slices.Sorted(maps.Keys(q))[0], "unknown parameter")
}

// storable reports whether s can be stored and compared as PostgreSQL text:
// valid UTF-8 without NUL characters.
func storable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// reasonInteger is the reason of an integer parameter that is not written
// in the canonical decimal form.
const reasonInteger = `must be an integer in decimal digits, without "+", leading zeros, spaces or a fraction`

// parseInt parses the integer parameter name in [lo, hi]. Only the
// canonical decimal form is an integer: "0", or an optional "-" and digits
// without a leading zero. "+1", "01", "-0", " 1", "1e2", "0x10", "1.0" are
// not: each would be another spelling of a number, and a parameter has one.
func parseInt(name, v string, lo, hi int64) (int64, *Error) {
	if !canonicalInt(v) {
		return 0, invalidParam(name, reasonInteger)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, invalidParam(name, fmt.Sprintf("must be between %d and %d", lo, hi))
	}
	return n, nil
}

// canonicalInt reports whether s is "0" or an optional "-" followed by ASCII
// digits without a leading zero.
func canonicalInt(s string) bool {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || digits[0] == '0' && (len(digits) > 1 || len(s) > 1) {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}
