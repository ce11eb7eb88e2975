package storage

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/schema"

	"github.com/fleetapi/fleetapi/policy"
)

// FieldKind is the type of a listed resource's field, as exact-match
// filters parse it and as SQL compares it.
type FieldKind int

// The field kinds of the listed resources.
const (
	KindInt      FieldKind = iota // integer, a bigint column
	KindText                      // string
	KindBool                      // boolean
	KindDate                      // "YYYY-MM-DD"
	KindTime                      // RFC 3339 timestamp
	KindTextList                  // list of strings; a filter matches rows whose list contains the value
	KindObject                    // JSON object; a filter matches an equal object
	KindInt32                     // integer, an integer (32-bit) column (bun:"type:integer")
)

// Field is one listed field of a resource: its name is its wire name (the
// json tag) and its column (the bun name), which are the same.
type Field struct {
	Name string
	Kind FieldKind
	// Sort, Filter and Search say what a list request may do with the
	// field (the list tag: sort, filter, search=<position>).
	Sort, Filter, Search bool
	// Range (the list tag's range, on one KindTime field of a resource at
	// most): the list takes the parameters from and to, a half-open
	// interval [from, to) of the field (Filter.Op).
	Range bool
}

// IntRange returns the values a filter on the integer field f may take:
// its column's type range (integer for KindInt32, bigint for KindInt) from
// 0, since every integer column of a listed resource is CHECKed
// non-negative or references an identity column from 1, such as
// account_id (migrations/; TestListingKindsMatchColumns). A value outside can match no row, and
// PostgreSQL would refuse some of them, so it is a bad parameter, not an
// empty answer.
func (f Field) IntRange() (lo, hi int64) {
	if f.Kind == KindInt32 {
		return 0, math.MaxInt32
	}
	return 0, math.MaxInt64
}

// Descriptor is everything the layers know of one tenant resource,
// derived once from its bun model: the table and its alias and primary key
// from bun's table metadata, the listed fields from the list tags, the
// field kinds from the Go and SQL types, and the columns a row scope may
// name from the columns the table has. The policy resource name is the
// table name.
type Descriptor struct {
	resource policy.Resource
	table    string
	alias    string
	id       Field
	// fields are the listed fields other than the id, in struct order.
	fields []Field
	// search are the searched fields, in the order of their positions.
	search []Field
	// scope whitelists the real and virtual columns a scope may name.
	scope map[string]columnKind
	// model is the bun model's struct type.
	model reflect.Type
	// scopedBy, when set, is the column of an account id through which the
	// management scope (accountsScope) restricts the table's rows
	// (scopedByAccounts): the table has no scope of its own.
	scopedBy string
	// goneVia, when set (outlivingAccounts), is the column of account ids
	// through which a row whose scopedBy account no longer exists stays
	// in the scope of the accounts that were above it.
	goneVia string
	// counted: the table's rows are counted per account (declared with
	// the option counted; counters.go).
	counted bool
	// newestFirst: the list's default order is descending (declared with
	// the option newestFirst).
	newestFirst bool
	// index is the struct field index of the id and of every listed field
	// by name, and nullable names the listed columns that may hold NULL
	// (no notnull tag): the keyset cursor reads the last row's values
	// with the one and orders NULLs as PostgreSQL does with the other
	// (keyset.go).
	index    map[string][]int
	nullable map[string]bool
}

// Model is the Descriptor of the resource whose bun model is T.
type Model[T any] struct {
	*Descriptor
}

// Resource returns the policy resource: the rule data.fleet.scope.<name>
// decides which rows a caller sees.
func (d *Descriptor) Resource() policy.Resource { return d.resource }

// Table returns the SQL table name.
func (d *Descriptor) Table() string { return d.table }

// Alias returns the table's alias in the model's queries.
func (d *Descriptor) Alias() string { return d.alias }

// ID returns the primary key field (sortable, not filterable).
func (d *Descriptor) ID() Field { return d.id }

// Fields returns the listed fields other than the id, in struct order.
func (d *Descriptor) Fields() []Field { return slices.Clone(d.fields) }

// Field returns the listed field called name (the id included), and
// whether there is one.
func (d *Descriptor) Field(name string) (Field, bool) {
	if name == d.id.Name {
		return d.id, true
	}
	for _, f := range d.fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// RangeField returns the field the parameters from and to bound (the
// list tag's range), and whether the resource has one.
func (d *Descriptor) RangeField() (Field, bool) {
	for _, f := range d.fields {
		if f.Range {
			return f, true
		}
	}
	return Field{}, false
}

// SortFields returns the sort enumeration: the id, then every sortable
// field.
func (d *Descriptor) SortFields() []string {
	out := []string{d.id.Name}
	for _, f := range d.fields {
		if f.Sort {
			out = append(out, f.Name)
		}
	}
	return out
}

// SearchFields returns the names of the fields the free-text search
// matches, in order.
func (d *Descriptor) SearchFields() []string {
	out := make([]string, len(d.search))
	for i, f := range d.search {
		out[i] = f.Name
	}
	return out
}

// Listed reports whether the resource has a list (a field with a list tag).
func (d *Descriptor) Listed() bool { return len(d.fields) > 0 }

// Counted reports whether the resource's rows are counted per account
// (declared with the option counted): its unfiltered lists take their
// total from the counters when the scope has a counter form.
func (d *Descriptor) Counted() bool { return d.counted }

// col qualifies a column with the table alias.
func (d *Descriptor) col(name string) string { return `"` + d.alias + `"."` + name + `"` }

// registry holds the descriptors in declaration order. declare appends to
// it while the package's variables are initialised and nothing changes it
// afterwards.
var registry []*Descriptor

// Descriptors returns the descriptor of every tenant resource, as declared
// (one declare call per resource file).
func Descriptors() []*Descriptor { return slices.Clone(registry) }

// Resources returns the policy resource of every descriptor: the value of
// policy.Options.Resources.
func Resources() []policy.Resource {
	out := make([]policy.Resource, len(registry))
	for i, d := range registry {
		out[i] = d.resource
	}
	return out
}

// descriptorOf returns the descriptor of resource, or nil.
func descriptorOf(resource policy.Resource) *Descriptor {
	for _, d := range registry {
		if d.resource == resource {
			return d
		}
	}
	return nil
}

// Types of the fields whose kind is not the Go kind.
var (
	typeStringList = reflect.TypeFor[StringList]()
	typeJSONObject = reflect.TypeFor[JSONObject]()
	typeDate       = reflect.TypeFor[Date]()
	typeTime       = reflect.TypeFor[time.Time]()
)

// A declareOption is an option of a resource's declaration (declare).
type declareOption func(*Descriptor) error

// counted declares a resource whose rows are counted per account, so that
// an unfiltered list takes its total from the counters (counters.go). Its
// table needs an account_id column, and its migration must install the
// counting triggers with SELECT count_table('<table>') (and remove them
// with uncount_table in its down file, unless that drops the table):
// TestCountedTablesAreTheDeclared fails until the two agree.
func counted(d *Descriptor) error {
	if _, ok := d.scope["account_id"]; !ok {
		return fmt.Errorf("counted: table %s has no account_id column to count by", d.table)
	}
	d.counted = true
	return nil
}

// newestFirst declares a resource whose list is in descending order when
// the request names none (GET /notifications: newest first, docs/design.md
// §14); every other list is ascending by default (§4.2).
func newestFirst(d *Descriptor) error {
	d.newestFirst = true
	return nil
}

// DefaultDesc reports whether the list's default order is descending
// (declared with the option newestFirst): the api starts every request of
// the list from it, and its OpenAPI document says so.
func (d *Descriptor) DefaultDesc() bool { return d.newestFirst }

// declare derives the descriptor of the tenant resource whose bun model is
// T, applies the options of its declaration (counted) and registers it. A
// model it cannot describe is a programming error: it panics while the
// package initialises, so every test fails.
func declare[T any](options ...declareOption) Model[T] {
	d, err := describe(pgdialect.New().Tables().Get(reflect.TypeFor[T]()))
	for _, o := range options {
		if err == nil {
			err = o(d)
		}
	}
	if err != nil {
		panic(fmt.Sprintf("storage: declare %s: %v", reflect.TypeFor[T](), err))
	}
	if descriptorOf(d.resource) != nil {
		panic(fmt.Sprintf("storage: resource %q declared twice", d.resource))
	}
	registry = append(registry, d)
	return Model[T]{d}
}

// describe reads a bun table into a Descriptor.
func describe(t *schema.Table) (*Descriptor, error) {
	if len(t.PKs) != 1 {
		return nil, fmt.Errorf("table %s: %d primary key columns, want 1", t.Name, len(t.PKs))
	}
	d := &Descriptor{
		resource: policy.Resource(t.Name),
		table:    t.Name,
		alias:    t.Alias,
		id:       Field{Name: t.PKs[0].Name, Kind: KindInt, Sort: true},
		scope:    map[string]columnKind{},
		model:    t.Type,
		index:    map[string][]int{t.PKs[0].Name: t.PKs[0].Index},
		nullable: map[string]bool{},
	}
	positions := map[int]Field{}
	for _, f := range t.Fields {
		if err := d.scopeColumn(f); err != nil {
			return nil, err
		}
		tag, ok := f.StructField.Tag.Lookup("list")
		if !ok {
			continue
		}
		field := Field{Name: f.Name}
		wire, _, _ := strings.Cut(f.StructField.Tag.Get("json"), ",")
		if wire != f.Name {
			return nil, fmt.Errorf("listed field %s: json name %q is not the column %q", f.GoName, wire, f.Name)
		}
		var err error
		if field.Kind, err = kindOf(f); err != nil {
			return nil, err
		}
		for _, opt := range strings.Split(tag, ",") {
			switch name, value, _ := strings.Cut(opt, "="); name {
			case "sort":
				field.Sort = true
			case "filter":
				field.Filter = true
			case "range":
				field.Range = true
			case "search":
				pos, err := strconv.Atoi(value)
				if err != nil || pos < 1 || positions[pos].Name != "" {
					return nil, fmt.Errorf("field %s: search wants a unique position from 1, got %q", f.Name, value)
				}
				field.Search = true
				positions[pos] = field
			default:
				return nil, fmt.Errorf("field %s: unknown list option %q", f.Name, opt)
			}
		}
		if f.IsPK {
			continue // the id is always listed, sortable and not filterable
		}
		d.index[f.Name] = f.Index
		if !f.NotNull {
			d.nullable[f.Name] = true
		}
		d.fields = append(d.fields, field)
	}
	ranged := 0
	for _, f := range d.fields {
		if f.Range {
			ranged++
			if f.Kind != KindTime {
				return nil, fmt.Errorf("field %s: range wants a time field", f.Name)
			}
		}
	}
	if ranged > 1 {
		return nil, fmt.Errorf("table %s: %d range fields, want at most one", d.table, ranged)
	}
	for pos := 1; pos <= len(positions); pos++ {
		f, ok := positions[pos]
		if !ok {
			return nil, fmt.Errorf("search positions are not 1 to %d", len(positions))
		}
		d.search = append(d.search, f)
	}
	return d, nil
}

// kindOf derives a listed field's kind from its Go type and bun SQL type.
func kindOf(f *schema.Field) (FieldKind, error) {
	switch typ := f.IndirectType; {
	case typ == typeStringList:
		return KindTextList, nil
	case typ == typeJSONObject:
		return KindObject, nil
	case typ == typeDate:
		return KindDate, nil
	case typ == typeTime:
		return KindTime, nil
	case typ.Kind() == reflect.Bool:
		return KindBool, nil
	case typ.Kind() == reflect.String:
		return KindText, nil
	case typ.Kind() == reflect.Int32 || typ.Kind() == reflect.Int && f.UserSQLType == "integer":
		return KindInt32, nil
	case typ.Kind() == reflect.Int64 || typ.Kind() == reflect.Int:
		return KindInt, nil
	}
	return 0, fmt.Errorf("field %s: no list kind for %s (bun type %q)", f.Name, f.IndirectType, f.UserSQLType)
}

// scopeColumn adds the scope columns a model column brings (docs/design.md §6):
// account_id brings itself and the virtual manager_id (the owning
// account's manager); imei brings the virtual granted_to (the subaccount
// to which the row's device, or every device of its list, is granted), and
// as a scalar column itself.
func (d *Descriptor) scopeColumn(f *schema.Field) error {
	switch f.Name {
	case "account_id":
		d.scope["account_id"] = kindInt
		d.scope["manager_id"] = kindManager
	case "imei":
		switch {
		case f.IndirectType.Kind() == reflect.String:
			d.scope["imei"] = kindText
			d.scope["granted_to"] = kindGrantedScalar
		case f.IndirectType == typeStringList:
			d.scope["granted_to"] = kindGrantedArray
		default:
			return fmt.Errorf("column imei of %s is %s, neither a string nor a StringList", d.table, f.IndirectType)
		}
	}
	return nil
}
