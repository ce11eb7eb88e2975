package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fleetapi/fleetapi/storage"
)

// The keyset extension of the lists (docs/api.md §6, "Walking a whole list";
// docs/decisions.md, "Deep pages"): meta.next is an opaque cursor after
// the page's last row, and ?after=<cursor> returns the rows strictly after
// it in the same order.
const (
	paramAfter = "after"
	// maxCursor bounds the after parameter, in characters: well inside
	// the 32 KiB request header block the server reads.
	maxCursor = 24 << 10
	// cursorVersion is the first element of every cursor; a cursor of
	// another version (1: not bound to its list and query) is not one of
	// this list.
	cursorVersion = 2
	// cursorCheck is the length of the checksum that ends a cursor, and of
	// the digest of the query it was made for.
	cursorCheck = 8
	// cursorPattern is the alphabet of a cursor (base64url without
	// padding); its checksum, which only the server makes, is what no
	// schema can say.
	cursorPattern = `^[A-Za-z0-9_-]+$`
)

// Reasons of the after values that are refused.
const (
	reasonCursor      = "not a cursor of this list: send meta.next unchanged"
	reasonCursorLong  = "longer than the longest cursor (24576 characters)"
	reasonCursorPage  = "cannot be combined with page > 1: a cursor is a position of its own"
	reasonCursorOrder = "made for sort=%s&order=%s: send it with the same sort and order, or start again without after"
	reasonCursorQuery = "made for other filters or search: send it with the filters and search of the request that gave it, or start again without after"
)

// listCursor is a cursor read from the after parameter: the position, and
// what it belongs to besides its order (applyCursor checks both).
type listCursor struct {
	*storage.Cursor
	// list is the list it was made for: its path below the base path,
	// with the path's parameters ("/objects", "/accounts/14/objects").
	list string
	// query is the digest of the filters and search it was made for
	// (queryDigest).
	query string
}

// encodeCursor writes c, the cursor after a page of list (the path of the
// list below the base path, with its parameters: "/objects",
// "/accounts/14/objects"), a list of resource, for the request req, as the
// opaque value of meta.next: base64url (no padding) of the JSON array
// [version, resource, list, query, sort, order, value, id], where query is
// the digest of req's filters and search (queryDigest), followed by the
// first 8 bytes of its SHA-256, which detects a cursor damaged or edited
// by hand. The checksum is not a signature: a cursor only chooses a
// position among the rows the caller's scope, filters and search admit,
// so a made-up one shows nothing more. The list and the query bind the
// cursor to the request that gave it: another list of the same resource,
// or the same list with other filters or search, refuses it (applyCursor),
// since there it would mean another position.
func encodeCursor(resource, list string, req storage.ListRequest, c *storage.Cursor) (string, error) {
	value, err := cursorValue(c)
	if err != nil {
		return "", err
	}
	query, err := queryDigest(req)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode([]any{cursorVersion, resource, list, query, c.Sort.Name, order(c.Desc), value, c.ID}); err != nil {
		return "", err
	}
	payload := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	sum := sha256.Sum256(payload)
	return base64.RawURLEncoding.EncodeToString(append(payload, sum[:cursorCheck]...)), nil
}

// queryDigest is the digest of what, besides the list and the order,
// chooses the rows of req: its filters (by field name, each value in its
// JSON form, so that two spellings of one value are one query) and its
// search. base64url of the first 8 bytes of the SHA-256 of their JSON.
func queryDigest(req storage.ListRequest) (string, error) {
	filters := slices.Clone(req.Filters)
	slices.SortFunc(filters, func(a, b storage.Filter) int { return strings.Compare(filterKey(a), filterKey(b)) })
	parts := make([]any, 0, 2*len(filters)+1)
	for _, f := range filters {
		v, err := fieldJSON(f.Value)
		if err != nil {
			return "", fmt.Errorf("cursor: filter %s: %w", f.Field.Name, err)
		}
		parts = append(parts, filterKey(f), v)
	}
	parts = append(parts, req.Search)
	raw, err := json.Marshal(parts)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return base64.RawURLEncoding.EncodeToString(sum[:cursorCheck]), nil
}

// filterKey names a filter in a cursor's query digest: the field's name
// for an exact match (as before the range extension, so that those
// cursors keep their digest), the parameter (from, to) for a range bound.
func filterKey(f storage.Filter) string {
	switch f.Op {
	case storage.FilterFrom:
		return paramFrom
	case storage.FilterTo:
		return paramTo
	}
	return f.Field.Name
}

// order is the order parameter's value of a direction.
func order(desc bool) string {
	if desc {
		return "desc"
	}
	return "asc"
}

// cursorValue is the JSON form of a cursor's value: null for NULL and for
// a list sorted by its id, otherwise fieldJSON's.
func cursorValue(c *storage.Cursor) (any, error) {
	v, err := fieldJSON(c.Value)
	if err != nil {
		return nil, fmt.Errorf("cursor: %w of %s", err, c.Sort.Name)
	}
	return v, nil
}

// fieldJSON is the JSON form of a value of a field (a sort value, a filter
// value): null for nil; a number, string or boolean; a date as
// "YYYY-MM-DD"; a timestamp as RFC 3339 in UTC with microseconds; a list
// of strings as an array; an object as itself.
func fieldJSON(value any) (any, error) {
	if value == nil {
		return nil, nil
	}
	switch v := value.(type) {
	case int64:
		return json.Number(strconv.FormatInt(v, 10)), nil
	case string, bool, storage.StringList, storage.JSONObject:
		return v, nil
	case storage.Date:
		return v.String(), nil
	case time.Time:
		return v.UTC().Format("2006-01-02T15:04:05.999999Z07:00"), nil
	}
	return nil, fmt.Errorf("no JSON form for a value %T", value)
}

// decodeCursor reads the after parameter of a list of d: a cursor that
// encodeCursor wrote for the same resource, whose value parses as the
// sort field's (as a filter value would, so that nothing the column could
// not hold reaches the database). The caller checks that its list, sort,
// order, filters and search are the request's (applyCursor). Anything
// else is INVALID_PARAMETER naming after.
func decodeCursor(v string, d *storage.Descriptor) (*listCursor, *Error) {
	if len(v) > maxCursor {
		return nil, invalidParam(paramAfter, reasonCursorLong)
	}
	bad := invalidParam(paramAfter, reasonCursor)
	raw, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(raw) <= cursorCheck {
		return nil, bad
	}
	payload, check := raw[:len(raw)-cursorCheck], raw[len(raw)-cursorCheck:]
	if sum := sha256.Sum256(payload); !bytes.Equal(sum[:cursorCheck], check) {
		return nil, bad
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(payload, &parts); err != nil || len(parts) != 8 {
		return nil, bad
	}
	var (
		version                          int
		resource, list, query, sort, dir string
		id                               int64
	)
	if json.Unmarshal(parts[0], &version) != nil || version != cursorVersion ||
		json.Unmarshal(parts[1], &resource) != nil || resource != string(d.Resource()) ||
		json.Unmarshal(parts[2], &list) != nil || json.Unmarshal(parts[3], &query) != nil ||
		json.Unmarshal(parts[4], &sort) != nil || json.Unmarshal(parts[5], &dir) != nil ||
		json.Unmarshal(parts[7], &id) != nil || id < 0 {
		return nil, bad
	}
	f, ok := d.Field(sort)
	if !ok || !f.Sort || dir != "asc" && dir != "desc" {
		return nil, bad
	}
	c := &listCursor{Cursor: &storage.Cursor{Sort: f, Desc: dir == "desc", ID: id}, list: list, query: query}
	if f == d.ID() || string(parts[6]) == "null" {
		return c, nil
	}
	if c.Value, ok = parseCursorValue(f, parts[6]); !ok {
		return nil, bad
	}
	return c, nil
}

// parseCursorValue parses the JSON form of a cursor's value of field f
// (cursorValue) into the type of a filter value, with the checks of a
// filter value (parseFilter).
func parseCursorValue(f storage.Field, raw json.RawMessage) (any, bool) {
	var s string
	switch f.Kind {
	case storage.KindInt, storage.KindInt32:
		var n json.Number
		if json.Unmarshal(raw, &n) != nil {
			return nil, false
		}
		s = n.String()
	case storage.KindBool:
		var b bool
		if json.Unmarshal(raw, &b) != nil {
			return nil, false
		}
		return b, true
	case storage.KindTextList:
		var list []string
		if json.Unmarshal(raw, &list) != nil || list == nil {
			return nil, false
		}
		for _, e := range list {
			if !storable(e) {
				return nil, false
			}
		}
		return storage.StringList(list), true
	case storage.KindObject:
		s = string(raw)
	default:
		if json.Unmarshal(raw, &s) != nil {
			return nil, false
		}
	}
	if !storable(s) {
		return nil, false
	}
	v, err := parseFilter(f, s)
	if err != nil {
		return nil, false
	}
	return v, true
}

// applyCursor checks the after value of req, a request of list (the
// list's path below the base path, with its parameters), against the
// rest of the request (after parseListRequest has read every parameter):
// a cursor with a page beyond the first, of another list, of another sort
// or order, or of other filters or search is INVALID_PARAMETER naming
// after.
func applyCursor(req *storage.ListRequest, c *listCursor, list string) error {
	if req.Page != 1 {
		return invalidParam(paramAfter, reasonCursorPage)
	}
	if c.list != list {
		return invalidParam(paramAfter, reasonCursor)
	}
	if c.Sort != req.Sort || c.Desc != req.Desc {
		return invalidParam(paramAfter, fmt.Sprintf(reasonCursorOrder, c.Sort.Name, order(c.Desc)))
	}
	query, err := queryDigest(*req)
	if err != nil {
		return err
	}
	if c.query != query {
		return invalidParam(paramAfter, reasonCursorQuery)
	}
	req.After = c.Cursor
	return nil
}
