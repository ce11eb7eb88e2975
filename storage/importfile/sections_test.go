package importfile_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/storage/importfile"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// TestSectionsDriveTheFormat checks that the section list alone makes the
// format: every section's key is read from the file, its records are named
// by its natural key in errors, and the result counts every section once,
// in the order they apply.
func TestSectionsDriveTheFormat(t *testing.T) {
	t.Parallel()
	db := storagetest.New(t)
	secs := importfile.Sections()
	var names []string
	for _, s := range secs {
		names = append(names, s.Name)
	}

	t.Run("apply_order_of_design_8", func(t *testing.T) {
		// docs/design.md §8's order, with any later section after it.
		design := []string{"accounts", "objects", "grants", "tokens", "services", "reports", "events", "passengers"}
		if len(names) < len(design) || !slices.Equal(names[:len(design)], design) {
			t.Fatalf("sections apply in the order %q, want %q first", names, design)
		}
	})

	t.Run("result_counts_every_section", func(t *testing.T) {
		res, err := importfile.Load(context.Background(), db.DB, strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Sorted(maps.Keys(res)); !slices.Equal(got, slices.Sorted(slices.Values(names))) {
			t.Fatalf("result has sections %q, want %q", got, names)
		}
		var want []string
		for _, n := range names {
			want = append(want, n+": 0 inserted, 0 skipped")
		}
		if got := res.String(); got != strings.Join(want, "; ") {
			t.Fatalf("summary %q, want %q", got, strings.Join(want, "; "))
		}
	})

	for _, s := range secs {
		if s.File != s.Name {
			continue // it reads another section's records
		}
		t.Run(s.Name+"_named_by_its_key", func(t *testing.T) {
			rec := map[string]any{"zz_unknown": true}
			var key []string
			for _, f := range s.Key {
				rec[f] = "v-" + f
				key = append(key, fmt.Sprintf("%s %q", f, "v-"+f))
			}
			file := mustJSON(t, map[string]any{s.File: []any{rec}})
			_, err := importfile.Load(context.Background(), db.DB, strings.NewReader(string(file)))
			var re *importfile.RecordError
			if !errors.As(err, &re) {
				t.Fatalf("error %v, want a *RecordError", err)
			}
			if re.Section != s.File || re.Index != 0 || re.Key != strings.Join(key, ", ") {
				t.Errorf("error names %s[%d] (%s), want %s[0] (%s)", re.Section, re.Index, re.Key, s.File, strings.Join(key, ", "))
			}
			if !strings.Contains(err.Error(), `unknown field "zz_unknown"`) {
				t.Errorf("error %q does not name the unknown field", err)
			}
		})
	}
}
