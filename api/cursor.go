package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
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
	// cursorVersion is the first element of every cursor.
	cursorVersion = 1
	// cursorCheck is the length of the checksum that ends a cursor.
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
)

// encodeCursor writes c, a cursor of resource, as the opaque value of
// meta.next: base64url (no padding) of the JSON array [version, resource,
// sort, order, value, id] followed by the first 8 bytes of its SHA-256,
// which detects a cursor damaged or edited by hand. The checksum is not a
// signature: a cursor only chooses a position among the rows the caller's
// scope, filters and search admit, so a made-up one shows nothing more.
func encodeCursor(resource string, c *storage.Cursor) (string, error) {
	value, err := cursorValue(c)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode([]any{cursorVersion, resource, c.Sort.Name, order(c.Desc), value, c.ID}); err != nil {
		return "", err
	}
	payload := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	sum := sha256.Sum256(payload)
	return base64.RawURLEncoding.EncodeToString(append(payload, sum[:cursorCheck]...)), nil
}

// order is the order parameter's value of a direction.
func order(desc bool) string {
	if desc {
		return "desc"
	}
	return "asc"
}

// cursorValue is the JSON form of a cursor's value: null for NULL and for
// a list sorted by its id; a number, string or boolean; a date as
// "YYYY-MM-DD"; a timestamp as RFC 3339 in UTC with microseconds; a list
// of strings as an array; an object as itself.
func cursorValue(c *storage.Cursor) (any, error) {
	if c.Value == nil {
		return nil, nil
	}
	switch v := c.Value.(type) {
	case int64:
		return json.Number(strconv.FormatInt(v, 10)), nil
	case string, bool, storage.StringList, storage.JSONObject:
		return v, nil
	case storage.Date:
		return v.String(), nil
	case time.Time:
		return v.UTC().Format("2006-01-02T15:04:05.999999Z07:00"), nil
	}
	return nil, fmt.Errorf("cursor: no JSON form for a value %T of %s", c.Value, c.Sort.Name)
}

// decodeCursor reads the after parameter of a list of d: a cursor that
// encodeCursor wrote for the same resource, whose value parses as the
// sort field's (as a filter value would, so that nothing the column could
// not hold reaches the database). The caller checks that its sort and
// order are the request's. Anything else is INVALID_PARAMETER naming
// after.
func decodeCursor(v string, d *storage.Descriptor) (*storage.Cursor, *Error) {
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
	if err := json.Unmarshal(payload, &parts); err != nil || len(parts) != 6 {
		return nil, bad
	}
	var (
		version             int
		resource, sort, dir string
		id                  int64
	)
	if json.Unmarshal(parts[0], &version) != nil || version != cursorVersion ||
		json.Unmarshal(parts[1], &resource) != nil || resource != string(d.Resource()) ||
		json.Unmarshal(parts[2], &sort) != nil || json.Unmarshal(parts[3], &dir) != nil ||
		json.Unmarshal(parts[5], &id) != nil || id < 0 {
		return nil, bad
	}
	f, ok := d.Field(sort)
	if !ok || !f.Sort || dir != "asc" && dir != "desc" {
		return nil, bad
	}
	c := &storage.Cursor{Sort: f, Desc: dir == "desc", ID: id}
	if f == d.ID() || string(parts[4]) == "null" {
		return c, nil
	}
	if c.Value, ok = parseCursorValue(f, parts[4]); !ok {
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

// applyCursor checks the after value of req against the rest of the
// request (after parseListRequest has read every parameter): a cursor of
// another sort or order, or with a page beyond the first, is
// INVALID_PARAMETER naming after.
func applyCursor(req *storage.ListRequest, c *storage.Cursor) *Error {
	if req.Page != 1 {
		return invalidParam(paramAfter, reasonCursorPage)
	}
	if c.Sort != req.Sort || c.Desc != req.Desc {
		return invalidParam(paramAfter, fmt.Sprintf(reasonCursorOrder, c.Sort.Name, order(c.Desc)))
	}
	req.After = c
	return nil
}
