package importfile

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Section describes one section of the import file (docs/design.md §8).
type Section struct {
	// Name names the section in the result.
	Name string
	// File is the key of the file whose records the section reads: its
	// Name, except for a section derived from another's records (grants
	// read the accounts').
	File string
	// Key lists the natural-key fields that name a record in errors.
	Key []string
}

// Sections returns the sections in the order they apply: the order of the
// result, whatever the order of the file.
func Sections() []Section {
	secs := ordered()
	out := make([]Section, len(secs))
	for i, s := range secs {
		out[i] = s.Section
		out[i].Key = slices.Clone(s.Key)
	}
	return out
}

// spec declares a section whose records decode into T (declareSection).
// Exactly one of load and loadAll is set.
type spec[T any] struct {
	// name is the section's name in the file and the result.
	name string
	// file is the key of the file whose records it reads, when that is
	// not its name.
	file string
	// after is the section applied just before it; "" for the first.
	after string
	// key lists the natural-key fields that name a record in errors.
	key []string
	// load loads one record, which ref names in errors: inserted is false
	// when a row matching its natural key exists and the record was
	// skipped. A record that sets its type's dbAssigned field is refused
	// before load sees it.
	load func(ctx context.Context, im *importer, ref recordRef, v T) (inserted bool, err error)
	// loadAll loads the section's records at once and counts them itself,
	// for records that depend on each other.
	loadAll func(ctx context.Context, im *importer, recs []record[T], n *Count) error
	// dump writes the section's records of an exported subtree (Export),
	// one emit per record, in an order the import can load them in. Every
	// section that reads its own key has one; a section derived from
	// another's records (grants) is written by that section's dump.
	dump func(ctx context.Context, ex *exporter, emit func(T) error) error
}

// section is a declared section: what it is, and how its records are
// decoded into a step that loads them.
type section struct {
	Section
	after  string
	decode func(raws []json.RawMessage) (step, error)
	// dump writes the section's records of an export as JSON values, one
	// emit each; nil for a section derived from another's records.
	dump func(ctx context.Context, ex *exporter, emit func(json.RawMessage) error) error
}

// step loads a decoded section inside the import's transaction.
type step func(ctx context.Context, im *importer, n *Count) error

// registry holds the sections as declared. declareSection appends to it
// while the package's variables are initialised and nothing changes it
// afterwards.
var registry []*section

// declareSection registers a section: each section's file declares it,
// `var _ = declareSection(spec[importX]{...})`, and decoding, the order of
// application, the result and its summary follow from the declaration.
// A declaration it cannot use is a programming error: it panics while
// the package initialises, so every test fails.
func declareSection[T any](sp spec[T]) *section {
	s, err := newSection(sp)
	for _, o := range registry {
		if err == nil && o.Name == s.Name {
			err = errors.New("declared twice")
		}
	}
	if err != nil {
		panic(fmt.Sprintf("importfile: section %q: %v", sp.name, err))
	}
	registry = append(registry, s)
	return s
}

// newSection makes the section a spec declares.
func newSection[T any](sp spec[T]) (*section, error) {
	if sp.name == "" || len(sp.key) == 0 || (sp.load == nil) == (sp.loadAll == nil) {
		return nil, errors.New("want a name, a key and one of load or loadAll")
	}
	assigned, err := assignedField(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	if assigned != nil && sp.loadAll != nil {
		return nil, errors.New("a section loaded with loadAll refuses its records' ids itself: use load")
	}
	if (sp.dump == nil) != (sp.file != "" && sp.file != sp.name) {
		return nil, errors.New("a section that reads its own key needs a dump (the export writes it), and only such a section has one")
	}
	s := &section{Section: Section{Name: sp.name, File: cmp.Or(sp.file, sp.name), Key: sp.key}, after: sp.after}
	if sp.dump != nil {
		s.dump = func(ctx context.Context, ex *exporter, emit func(json.RawMessage) error) error {
			return sp.dump(ctx, ex, func(v T) error {
				b, err := json.Marshal(v)
				if err != nil {
					return fmt.Errorf("export: %s: %w", sp.name, err)
				}
				return emit(b)
			})
		}
	}
	s.decode = func(raws []json.RawMessage) (step, error) {
		recs, err := decodeRecords[T](s.Section, raws)
		if err != nil {
			return nil, err
		}
		if sp.loadAll != nil {
			return func(ctx context.Context, im *importer, n *Count) error { return sp.loadAll(ctx, im, recs, n) }, nil
		}
		return func(ctx context.Context, im *importer, n *Count) error {
			for _, r := range recs {
				if assigned != nil && assigned.set(r.val) {
					return r.ref.errorf("%s is assigned by the database", assigned.name)
				}
				inserted, err := sp.load(ctx, im, r.ref, r.val)
				if err != nil {
					return err
				}
				if inserted {
					n.Inserted++
				} else {
					n.Skipped++
				}
			}
			return nil
		}, nil
	}
	return s, nil
}

// dbAssigned is the type of a record's field that shadows the id the
// database assigns to its row (ReportID dbAssigned `json:"report_id"`): a
// record that sets it, even to null, is refused when its turn to load
// comes.
type dbAssigned struct{ set bool }

// UnmarshalJSON notes that the record sets the field.
func (d *dbAssigned) UnmarshalJSON([]byte) error {
	d.set = true
	return nil
}

// idField is a record type's dbAssigned field.
type idField struct {
	name  string // in JSON
	index []int
}

// set reports whether the record v set the field.
func (f *idField) set(v any) bool {
	return reflect.ValueOf(v).FieldByIndex(f.index).Interface().(dbAssigned).set
}

// assignedField returns the record type's dbAssigned field, or nil. A
// record that embeds a model whose primary key the database assigns must
// have one, of the key's JSON name: else a record could set the id.
func assignedField(t reflect.Type) (*idField, error) {
	var id *idField
	var want string
	for f := range t.Fields() {
		switch {
		case f.Type == reflect.TypeFor[dbAssigned]():
			id = &idField{name: jsonName(f), index: f.Index}
		case f.Anonymous && f.Type.Kind() == reflect.Struct:
			for m := range f.Type.Fields() {
				if tag := strings.Split(m.Tag.Get("bun"), ","); slices.Contains(tag, "autoincrement") && jsonName(m) != "-" {
					want = jsonName(m)
				}
			}
		}
	}
	if want != "" && (id == nil || id.name != want) {
		return nil, fmt.Errorf("record type %s embeds a model whose %s the database assigns: shadow it with a dbAssigned field tagged json:%q", t, want, want)
	}
	return id, nil
}

// jsonName is the name of a struct field in JSON.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return cmp.Or(name, f.Name)
}

// ordered returns the declared sections in the order they apply. Sections
// that do not form one chain are a programming error: it panics, so every
// test fails.
func ordered() []*section {
	secs, err := order(registry)
	if err != nil {
		panic("importfile: " + err.Error())
	}
	return secs
}

// order puts sections in the order they apply: the first has no after,
// each next one names the one before.
func order(secs []*section) ([]*section, error) {
	next := map[string]*section{}
	for _, s := range secs {
		if o, dup := next[s.after]; dup {
			return nil, fmt.Errorf("sections %q and %q both apply after %q", o.Name, s.Name, s.after)
		}
		next[s.after] = s
	}
	var out []*section
	for s := next[""]; s != nil; s = next[s.Name] {
		out = append(out, s)
	}
	if len(out) != len(secs) {
		var lost []string
		for _, s := range secs {
			if !slices.Contains(out, s) {
				lost = append(lost, fmt.Sprintf("%s after %q", s.Name, s.after))
			}
		}
		return nil, fmt.Errorf("sections not in one chain from the first: %s", strings.Join(lost, ", "))
	}
	return out, nil
}
