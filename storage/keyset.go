package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/storage/internal/paging"
)

// Cursor is a position in a list for keyset paging (an extension of the
// spec's paging: docs/decisions.md, "Deep pages"): the list's sort field
// and direction, and the sort value and id of the last row before the
// position. ListRequest.After asks for the rows strictly after it, in the
// list's order; Page.Next is the cursor after a page's last row when more
// rows follow. A cursor holds no scope: the rows after it are always those
// of the caller's own scope, filters and search.
type Cursor struct {
	// Sort and Desc are the list's order; Sort is the id field when the
	// list is sorted by id.
	Sort Field
	Desc bool
	// Value is the last row's value of Sort, of the type of a Filter value
	// of the field's kind (a KindTextList value is a StringList), nil for
	// NULL; unused when Sort is the id.
	Value any
	// ID is the last row's id.
	ID int64
}

// applyAfter adds to q the condition of the rows strictly after req.After
// in the order ORDER BY sort <dir>, id <dir> (sort is the request's sort
// field, the id field for none): paging.Order.After, with the cursor's
// value cast to the column's type (keysetValue). A cursor of another
// order is ErrBadListRequest: the api refuses it first.
func applyAfter(q *bun.SelectQuery, d *Descriptor, req ListRequest, sort Field) error {
	c := req.After
	if c == nil {
		return nil
	}
	if c.Sort != sort || c.Desc != req.Desc {
		return fmt.Errorf("%w: a cursor of sort %q desc %v on a list sorted by %q desc %v", ErrBadListRequest, c.Sort.Name, c.Desc, sort.Name, req.Desc)
	}
	k := paging.Order{Col: d.col(sort.Name), ID: d.col(d.id.Name), ByID: sort.Name == d.id.Name, Nullable: d.nullable[sort.Name], Desc: req.Desc}
	var placeholder string
	var v any
	if !k.ByID && c.Value != nil {
		var err error
		if placeholder, v, err = keysetValue(sort, c.Value); err != nil {
			return err
		}
	}
	cond, args := k.After(v, c.Value == nil, placeholder, c.ID)
	q.Where(cond, args...)
	return nil
}

// keysetValue returns the placeholder and the bound argument of a cursor's
// value of field f, cast to the column's type so that PostgreSQL compares
// it as ORDER BY does.
func keysetValue(f Field, value any) (string, any, error) {
	bad := fmt.Errorf("%w: cursor value %T for the %s field %s", ErrBadListRequest, value, kindName(f.Kind), f.Name)
	switch f.Kind {
	case KindInt, KindInt32:
		if v, ok := value.(int64); ok {
			return "?", v, nil
		}
	case KindText:
		if v, ok := value.(string); ok {
			return "?", v, nil
		}
	case KindBool:
		if v, ok := value.(bool); ok {
			return "?", v, nil
		}
	case KindDate:
		if v, ok := value.(Date); ok {
			return "?::date", v, nil
		}
	case KindTime:
		if v, ok := value.(time.Time); ok {
			return "?::timestamptz", v, nil
		}
	case KindTextList:
		if v, ok := value.(StringList); ok {
			return "?::text[]", pgdialect.Array([]string(v.orEmpty())), nil
		}
	case KindObject:
		if v, ok := value.(JSONObject); ok {
			b, err := json.Marshal(v)
			if err != nil {
				return "", nil, fmt.Errorf("%w: cursor value of %s: %v", ErrBadListRequest, f.Name, err)
			}
			return "?::jsonb", string(b), nil
		}
	}
	return "", nil, bad
}

// kindName names a field kind in errors.
func kindName(k FieldKind) string {
	switch k {
	case KindInt, KindInt32:
		return "integer"
	case KindText:
		return "text"
	case KindBool:
		return "boolean"
	case KindDate:
		return "date"
	case KindTime:
		return "timestamp"
	case KindTextList:
		return "text list"
	case KindObject:
		return "object"
	}
	return fmt.Sprintf("kind %d", k)
}

// cursorAfter returns the cursor after row, a row of d's model (a struct
// or a pointer to one), in the order of sort and desc: its value of sort
// in the form of a Filter value, and its id. exact, when not nil, reads
// the stored value of an object field again (a JSONObject scans its
// numbers as float64, which may not be the stored number: the cursor
// must hold the exact value for the condition to match ORDER BY).
func cursorAfter(ctx context.Context, d *Descriptor, row reflect.Value, sort Field, desc bool, exact func(ctx context.Context, id int64) (JSONObject, bool, error)) (*Cursor, error) {
	for row.Kind() == reflect.Pointer {
		row = row.Elem()
	}
	idIndex, ok := d.index[d.id.Name]
	if !ok || row.Type() != d.model {
		return nil, fmt.Errorf("storage: a row of %s is %s", d.resource, row.Type())
	}
	c := &Cursor{Sort: sort, Desc: desc, ID: row.FieldByIndex(idIndex).Int()}
	if sort.Name == d.id.Name {
		return c, nil
	}
	index, ok := d.index[sort.Name]
	if !ok {
		return nil, fmt.Errorf("storage: %s has no field %s", d.resource, sort.Name)
	}
	v := row.FieldByIndex(index)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return c, nil // NULL
		}
		v = v.Elem()
	}
	switch sort.Kind {
	case KindInt, KindInt32:
		c.Value = v.Int()
	case KindText:
		c.Value = v.String()
	case KindBool:
		c.Value = v.Bool()
	case KindDate:
		c.Value = v.Interface().(Date)
	case KindTime:
		c.Value = v.Interface().(time.Time)
	case KindTextList:
		c.Value = v.Interface().(StringList).orEmpty()
	case KindObject:
		obj := v.Interface().(JSONObject)
		if exact != nil {
			stored, found, err := exact(ctx, c.ID)
			if err != nil {
				return nil, err
			}
			if found {
				obj = stored
			}
		}
		if obj == nil {
			obj = JSONObject{}
		}
		c.Value = obj
	default:
		return nil, fmt.Errorf("storage: no cursor for the %s field %s", kindName(sort.Kind), sort.Name)
	}
	return c, nil
}
