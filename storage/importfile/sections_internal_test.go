package importfile

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
)

// TestSectionOrder checks that the sections apply along the chain of their
// declarations, and that anything but one chain is refused.
func TestSectionOrder(t *testing.T) {
	t.Parallel()
	sec := func(name, after string) *section {
		return &section{Section: Section{Name: name}, after: after}
	}
	names := func(secs []*section) (out []string) {
		for _, s := range secs {
			out = append(out, s.Name)
		}
		return out
	}
	c, a, b := sec("c", "b"), sec("a", ""), sec("b", "a")
	got, err := order([]*section{c, a, b})
	if err != nil || !reflect.DeepEqual(names(got), []string{"a", "b", "c"}) {
		t.Fatalf("order = %q, %v; want a, b, c", names(got), err)
	}
	for _, tc := range []struct {
		name string
		secs []*section
		want string
	}{
		{"two_after_one", []*section{a, b, sec("x", "a")}, `sections "b" and "x" both apply after "a"`},
		{"two_first", []*section{a, sec("x", "")}, `both apply after ""`},
		{"after_unknown", []*section{a, b, sec("x", "nowhere")}, `not in one chain from the first: x after "nowhere"`},
		{"cycle", []*section{a, sec("x", "y"), sec("y", "x")}, `x after "y", y after "x"`},
		{"no_first", []*section{b}, `b after "a"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := order(tc.secs); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("order: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := order(registry); err != nil {
		t.Fatalf("the declared sections: %v", err)
	}
}

// TestSectionDeclaration checks what a declaration must say, and that a
// record embedding a model cannot set the id the database assigns.
func TestSectionDeclaration(t *testing.T) {
	t.Parallel()
	load := func(context.Context, *importer, recordRef, importReport) (bool, error) { return false, nil }
	loadAll := func(context.Context, *importer, []record[importReport], *Count) error { return nil }
	type unshadowed struct {
		storage.Report
		Account string `json:"account"`
	}
	type misnamed struct {
		storage.Report
		ID dbAssigned `json:"id"`
	}
	for _, tc := range []struct {
		name string
		err  func() error
		want string
	}{
		{"no_name", func() error { _, err := newSection(spec[importReport]{key: []string{"name"}, load: load}); return err }, "want a name"},
		{"no_key", func() error { _, err := newSection(spec[importReport]{name: "x", load: load}); return err }, "want a name, a key"},
		{"no_load", func() error { _, err := newSection(spec[importReport]{name: "x", key: []string{"name"}}); return err }, "one of load or loadAll"},
		{"both_loads", func() error {
			_, err := newSection(spec[importReport]{name: "x", key: []string{"name"}, load: load, loadAll: loadAll})
			return err
		}, "one of load or loadAll"},
		{"id_with_load_all", func() error {
			_, err := newSection(spec[importReport]{name: "x", key: []string{"name"}, loadAll: loadAll})
			return err
		}, "use load"},
		{"id_not_shadowed", func() error {
			_, err := newSection(spec[unshadowed]{name: "x", key: []string{"name"},
				load: func(context.Context, *importer, recordRef, unshadowed) (bool, error) { return false, nil }})
			return err
		}, "whose report_id the database assigns"},
		{"id_shadowed_under_another_name", func() error {
			_, err := newSection(spec[misnamed]{name: "x", key: []string{"name"},
				load: func(context.Context, *importer, recordRef, misnamed) (bool, error) { return false, nil }})
			return err
		}, "whose report_id the database assigns"},
		{"no_dump", func() error {
			_, err := newSection(spec[importReport]{name: "x", key: []string{"name"}, load: load})
			return err
		}, "needs a dump"},
		{"dump_of_a_derived_section", func() error {
			_, err := newSection(spec[importReport]{name: "x", file: "y", key: []string{"name"}, load: load,
				dump: func(context.Context, *exporter, func(importReport) error) error { return nil }})
			return err
		}, "needs a dump"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.err(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("newSection: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
