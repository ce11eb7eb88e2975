package api

import (
	"maps"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// noParams rejects any query parameter on a route that takes none (a
// mistyped parameter must not be silently ignored).
func noParams(q url.Values) error {
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
