package api

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fleetapi/fleetapi/storage"
)

// Bounds of the shared list parameters (spec §4.2, §8).
const (
	maxPage        = math.MaxInt32
	maxPerPage     = 500
	defaultPerPage = 50
	minSearch      = 2
	maxSearch      = 100
)

// The shared list parameters (spec §4.2).
const (
	paramPage    = "page"
	paramPerPage = "per_page"
	paramSearch  = "search"
	paramOrder   = "order"
	paramSort    = "sort"
)

// invalidParam is the 400 INVALID_PARAMETER error naming the parameter.
func invalidParam(name, reason string) *Error {
	return newError(CodeInvalidParameter, fmt.Sprintf("invalid parameter %q: %s", name, reason),
		map[string]any{"parameter": name, "reason": reason})
}

// parseListRequest builds the typed list request of a resource from the
// query string: the shared parameters with their bounds and defaults, and
// one exact-match filter per field. An unknown, repeated, out-of-bounds or
// ill-typed parameter is INVALID_PARAMETER naming it.
func parseListRequest(q url.Values, l storage.Listing) (storage.ListRequest, error) {
	req := storage.ListRequest{Page: 1, PerPage: defaultPerPage, Sort: l.ID}
	// Sorted, so that the parameter an error names does not depend on map order.
	for _, name := range slices.Sorted(maps.Keys(q)) {
		values := q[name]
		if len(values) > 1 {
			return req, invalidParam(name, "given more than once")
		}
		v := values[0]
		if !storable(name) {
			return req, invalidParam(strings.ToValidUTF8(name, "?"), "not valid UTF-8 text")
		}
		if !storable(v) {
			return req, invalidParam(name, "not valid UTF-8 text without NUL characters")
		}
		var err *Error
		switch name {
		case paramPage:
			req.Page, err = parseBoundedInt(name, v, 1, maxPage)
		case paramPerPage:
			req.PerPage, err = parseBoundedInt(name, v, 1, maxPerPage)
		case paramSearch:
			req.Search = strings.TrimSpace(v)
			if n := utf8.RuneCountInString(req.Search); n < minSearch || n > maxSearch {
				err = invalidParam(name, fmt.Sprintf("must be %d to %d characters after trimming, got %d", minSearch, maxSearch, n))
			}
		case paramOrder:
			switch v {
			case "asc":
			case "desc":
				req.Desc = true
			default:
				err = invalidParam(name, `must be "asc" or "desc"`)
			}
		case paramSort:
			if _, ok := l.Field(v); !ok {
				err = invalidParam(name, "must be one of "+strings.Join(l.SortFields(), ", "))
			}
			req.Sort = v
		default:
			f, ok := l.Field(name)
			if !ok || f.Name == l.ID {
				err = invalidParam(name, "unknown parameter")
				break
			}
			var val any
			val, err = parseFilter(name, f.Kind, v)
			req.Filters = append(req.Filters, storage.Filter{Field: name, Value: val})
		}
		if err != nil {
			return req, err
		}
	}
	return req, nil
}

func parseBoundedInt(name, v string, lo, hi int64) (int, *Error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, invalidParam(name, "must be an integer")
	}
	if n < lo || n > hi {
		return 0, invalidParam(name, fmt.Sprintf("must be between %d and %d", lo, hi))
	}
	return int(n), nil
}

// parseFilter parses an exact-match filter value into its field's type.
func parseFilter(name string, kind storage.FieldKind, v string) (any, *Error) {
	switch kind {
	case storage.KindInt:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, invalidParam(name, "must be an integer")
		}
		return n, nil
	case storage.KindBool:
		switch v {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, invalidParam(name, `must be "true" or "false"`)
	case storage.KindDate:
		d, err := storage.ParseDate(v)
		if err != nil {
			return nil, invalidParam(name, "must be a date YYYY-MM-DD")
		}
		return d, nil
	case storage.KindTime:
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return nil, invalidParam(name, "must be an RFC 3339 timestamp")
		}
		return t, nil
	case storage.KindObject:
		var obj map[string]any
		if err := json.Unmarshal([]byte(v), &obj); err != nil || obj == nil {
			return nil, invalidParam(name, "must be a JSON object")
		}
		return obj, nil
	}
	return v, nil // KindText, KindTextList
}
