package api

import (
	"net/url"
	"strings"
)

// Reasons of the query strings that do not parse.
const (
	reasonSemicolon = `contains ";", which does not separate parameters: use "&" between parameters and "%3B" for a semicolon in a value`
	reasonEscape    = `malformed percent-encoding: "%" must be followed by two hexadecimal digits (write "%25" for a percent sign)`
)

// parseQuery reads a raw query string strictly, as the one reading of the
// query every handler uses. url.ParseQuery (and so r.URL.Query()) drops a
// pair holding ";" or a malformed "%" escape and goes on, which turns a
// filter the client sent into no filter and widens the answer (docs/design.md §5);
// here such a pair is INVALID_PARAMETER naming the parameter (its decoded
// name when it has one, else the name as sent). Pairs are separated by
// "&", names and values are decoded as application/x-www-form-urlencoded
// ("+" is a space); a pair without "=" has the empty value, and an empty
// pair ("a=1&&b=2", a trailing "&") holds nothing and is skipped, as the
// URL standard's form parser does.
func parseQuery(raw string) (url.Values, *Error) {
	q := url.Values{}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue
		}
		rawName, rawValue, _ := strings.Cut(pair, "=")
		if i := strings.IndexByte(rawName, ';'); i >= 0 {
			return nil, invalidParam(paramName(rawName[:i]), reasonSemicolon)
		}
		name, err := url.QueryUnescape(rawName)
		if err != nil {
			return nil, invalidParam(rawName, reasonEscape)
		}
		if strings.IndexByte(rawValue, ';') >= 0 {
			return nil, invalidParam(name, reasonSemicolon)
		}
		value, err := url.QueryUnescape(rawValue)
		if err != nil {
			return nil, invalidParam(name, reasonEscape)
		}
		q[name] = append(q[name], value)
	}
	return q, nil
}

// paramName is the name of a parameter as an error names it: decoded when
// it decodes, else as sent.
func paramName(raw string) string {
	if name, err := url.QueryUnescape(raw); err == nil {
		return name
	}
	return raw
}
