package api

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/fleetapi/fleetapi/storage"
)

// Bounds of the shared list parameters (docs/api.md §6). Those of page
// and per_page are storage's (storage.MaxPage, storage.MaxPerPage,
// storage.DefaultPerPage), which checks every list request against them.
const (
	minSearch = 2
	maxSearch = 100
)

// The shared list parameters (docs/api.md §6).
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
// raw query string of a request of list (the list's path below the base
// path, with its parameters, to which a cursor must belong): the shared
// parameters with their bounds and defaults, and one exact-match filter
// per field. A query string that does not parse (parseQuery), an unknown,
// repeated, out-of-bounds or ill-typed parameter, a filter value the
// database would refuse and a cursor of another list or query are
// INVALID_PARAMETER naming the parameter: no such value reaches the
// database.
func parseListRequest(rawQuery, list string, d *storage.Descriptor) (storage.ListRequest, error) {
	req, after, err := parseList(rawQuery, d)
	if err != nil {
		return req, err
	}
	if after != nil {
		if err := applyCursor(&req, after, list); err != nil {
			return req, err
		}
	}
	return req, nil
}

// parseList is parseListRequest without the check of the cursor after
// against the request's list, page, sort, order, filters and search: it
// returns the cursor apart, for a handler that completes the request
// first (listHandler's adjust: the default order of GET /audit-events)
// and then applies it (applyCursor).
func parseList(rawQuery string, d *storage.Descriptor) (storage.ListRequest, *listCursor, error) {
	req := storage.ListRequest{Page: 1, PerPage: storage.DefaultPerPage, Sort: d.ID(), Desc: d.DefaultDesc()}
	q, perr := parseQuery(rawQuery)
	if perr != nil {
		return req, nil, perr
	}
	var after *listCursor
	// Sorted, so that the parameter an error names does not depend on map order.
	for _, name := range slices.Sorted(maps.Keys(q)) {
		values := q[name]
		if len(values) > 1 {
			return req, nil, invalidParam(name, "given more than once")
		}
		v := values[0]
		if !storable(name) {
			return req, nil, invalidParam(strings.ToValidUTF8(name, "?"), "not valid UTF-8 text")
		}
		if !storable(v) {
			return req, nil, invalidParam(name, "not valid UTF-8 text without NUL characters")
		}
		var err *Error
		switch name {
		case paramAfter:
			after, err = decodeCursor(v, d)
		case paramPage:
			req.Page, err = parseBoundedInt(name, v, 1, storage.MaxPage)
		case paramPerPage:
			req.PerPage, err = parseBoundedInt(name, v, 1, storage.MaxPerPage)
		case paramSearch:
			if len(d.SearchFields()) == 0 {
				err = invalidParam(name, "unknown parameter")
				break
			}
			req.Search = strings.TrimSpace(v)
			if n := utf8.RuneCountInString(req.Search); n < minSearch || n > maxSearch {
				err = invalidParam(name, fmt.Sprintf("must be %d to %d characters after trimming, got %d", minSearch, maxSearch, n))
			}
		case paramOrder:
			req.Desc, err = parseChoice(name, v, "asc", "desc")
		case paramFrom, paramTo:
			// The range extension (docs/api.md §6): a list whose descriptor
			// has a range field takes the half-open interval [from, to) of it.
			rf, ok := d.RangeField()
			if !ok {
				err = invalidParam(name, "unknown parameter")
				break
			}
			t, terr := storage.ParseTimestamp(v)
			if terr != nil {
				err = invalidParam(name, reasonTime)
				break
			}
			op := storage.FilterFrom
			if name == paramTo {
				op = storage.FilterTo
			}
			req.Filters = append(req.Filters, storage.Filter{Field: rf, Value: t, Op: op})
		case paramSort:
			f, ok := d.Field(v)
			if !ok || !f.Sort {
				err = invalidParam(name, "must be one of "+strings.Join(d.SortFields(), ", "))
			}
			req.Sort = f
		default:
			f, ok := d.Field(name)
			if !ok || !f.Filter {
				err = invalidParam(name, "unknown parameter")
				break
			}
			var val any
			val, err = parseFilter(f, v)
			req.Filters = append(req.Filters, storage.Filter{Field: f, Value: val})
		}
		if err != nil {
			return req, nil, err
		}
	}
	return req, after, nil
}

// parseChoice parses the parameter name of two values, off or on: whether
// it is on. Any other value is INVALID_PARAMETER naming both.
func parseChoice(name, v, off, on string) (bool, *Error) {
	switch v {
	case off:
		return false, nil
	case on:
		return true, nil
	}
	return false, invalidParam(name, fmt.Sprintf("must be %q or %q", off, on))
}

func parseBoundedInt(name, v string, lo, hi int64) (int, *Error) {
	n, err := parseInt(name, v, lo, hi)
	return int(n), err
}

// Reasons of the filter values that do not parse.
const (
	reasonBool   = `must be "true" or "false"`
	reasonDate   = "must be a date YYYY-MM-DD from 0001-01-01 to 9999-12-31"
	reasonTime   = "must be an RFC 3339 timestamp YYYY-MM-DDTHH:MM:SS[.ffffff] then Z or ±HH:MM, in the years 0001 to 9999"
	reasonObject = "must be a JSON object PostgreSQL can store: no \u0000 or lone surrogate escapes, numbers of at most 1000 digits with an exponent from -1000 to 1000"
)

// parseFilter parses an exact-match filter value into its field's type,
// refusing every value the field's column could not hold (storage's
// parsers know PostgreSQL's limits).
func parseFilter(f storage.Field, v string) (any, *Error) {
	switch f.Kind {
	case storage.KindInt, storage.KindInt32:
		lo, hi := f.IntRange()
		n, err := parseInt(f.Name, v, lo, hi)
		if err != nil {
			return nil, err
		}
		return n, nil
	case storage.KindBool:
		switch v {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, invalidParam(f.Name, reasonBool)
	case storage.KindDate:
		d, err := storage.ParseDate(v)
		if err != nil {
			return nil, invalidParam(f.Name, reasonDate)
		}
		return d, nil
	case storage.KindTime:
		t, err := storage.ParseTimestamp(v)
		if err != nil {
			return nil, invalidParam(f.Name, reasonTime)
		}
		return t, nil
	case storage.KindObject:
		obj, err := storage.ParseJSONObject(v)
		if err != nil {
			return nil, invalidParam(f.Name, reasonObject)
		}
		return obj, nil
	case storage.KindText, storage.KindTextList:
		return v, nil // storable, checked for every parameter
	}
	// A kind added to storage without a parser here (a programming error):
	// never let its values through unchecked.
	return nil, newError(CodeInternal, "internal error", nil)
}
