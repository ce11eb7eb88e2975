package mutation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// scopeSet writes the embedded scope module and its tests to a new
// directory, with edit applied to the tests.
func scopeSet(t *testing.T, edit func(tests string) string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"fleet/scope/scope.rego", "fleet/scope/scope_test.rego"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "policy", "rego", filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		if strings.HasSuffix(f, "_test.rego") {
			src = edit(src)
		}
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// withoutTest removes the test rule name from a test module's source.
func withoutTest(t *testing.T, src, name string) string {
	t.Helper()
	i := strings.Index(src, "\n"+name+" if {\n")
	if i < 0 {
		t.Fatalf("no test %s", name)
	}
	j := strings.Index(src[i:], "\n}\n")
	return src[:i] + src[i+j+2:]
}

// TestMutateFindsPrivilegeSwaps: without the test of a subaccount holding
// exactly one privilege (as the scope tests were before it was written),
// exactly the swapped privileges of the report, event and notification
// scopes survive, reported with their place, the mutation and the original; with
// it, every mutant of the scope module is killed.
func TestMutateFindsPrivilegeSwaps(t *testing.T) {
	ctx := context.Background()
	weak := scopeSet(t, func(src string) string { return withoutTest(t, src, "test_subaccount_exactly_one_privilege") })
	var out strings.Builder
	rep, err := Run(ctx, weak, Options{}, &out)
	if !errors.Is(err, ErrSurvivors) {
		t.Fatalf("want surviving mutants, got %v\n%s", err, out.String())
	}
	// The survivors are named by their rule, never by their line: a rule
	// added to scope.rego above them (a new resource) moves the lines.
	var got, lines []string
	for _, m := range rep.Mutants {
		if m.Outcome == "survived" {
			got = append(got, m.File+" rule "+m.Rule+": "+m.Kind+" "+m.Mutation+" in "+m.Original)
			lines = append(lines, fmt.Sprintf("SURVIVED %s:%d (rule %s) [%s]", m.File, m.Line, m.Rule, m.ID))
		}
	}
	want := []string{
		`fleet/scope/scope.rego rule reports: swap-string "reports" → "event_notifications" in holds("reports")`,
		`fleet/scope/scope.rego rule events: swap-string "event_notifications" → "reports" in holds("event_notifications")`,
		`fleet/scope/scope.rego rule notifications: swap-string "event_notifications" → "reports" in holds("event_notifications")`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("survivors %q, want %q\n%s", got, want, out.String())
	}
	for _, line := range append(lines, "original: holds(\"reports\")", "mutated:  holds(\"event_notifications\")") {
		if !strings.Contains(out.String(), line) {
			t.Fatalf("report lacks %q:\n%s", line, out.String())
		}
	}
	kinds := map[string]bool{}
	for _, m := range rep.Mutants {
		kinds[m.Kind] = true
	}
	for _, k := range []string{NegateComparison, DeleteExpr, SwapString, SwapRef, ToggleNot, BodyTrue, BodyFalse} {
		if !kinds[k] {
			t.Errorf("no %s mutant of the scope module", k)
		}
	}

	// --files limits the mutations to named modules
	if _, err := Run(ctx, weak, Options{Files: []string{"fleet/authz/authz.rego"}}, io.Discard); err == nil || !strings.Contains(err.Error(), "no policy module") {
		t.Fatalf("a module the set lacks: %v", err)
	}

	full := scopeSet(t, func(src string) string { return src })
	rep, err = Run(ctx, full, Options{}, io.Discard)
	if err != nil || rep.Survived != 0 || rep.Killed == 0 || rep.Score != 100 {
		t.Fatalf("with the exactly-one-privilege test: %v, %d killed, %d survived", err, rep.Killed, rep.Survived)
	}
}

// TestMutateEquivalentMarkers: a survivor marked "# mutation: equivalent
// <id> <why>" in its module counts as equivalent and no longer fails the
// run; a marker without a justification, or one that names no survivor
// (stale), is an error.
func TestMutateEquivalentMarkers(t *testing.T) {
	ctx := context.Background()
	weak := scopeSet(t, func(src string) string { return withoutTest(t, src, "test_subaccount_exactly_one_privilege") })
	rep, err := Run(ctx, weak, Options{}, io.Discard)
	if !errors.Is(err, ErrSurvivors) {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range rep.Mutants {
		if m.Outcome == "survived" {
			ids = append(ids, m.ID)
		}
	}
	file := filepath.Join(weak, "fleet/scope/scope.rego")
	orig, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	write := func(markers string) {
		t.Helper()
		if err := os.WriteFile(file, append(append([]byte{}, orig...), markers...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var all string
	for _, id := range ids {
		all += "\n# mutation: equivalent " + id + " the test set of this test omits it on purpose\n"
	}
	write(all)
	rep, err = Run(ctx, weak, Options{}, io.Discard)
	if err != nil || rep.Equivalent != len(ids) || rep.Survived != 0 {
		t.Fatalf("marked: %v, %d equivalent, %d survived", err, rep.Equivalent, rep.Survived)
	}
	write("\n# mutation: equivalent " + ids[0] + "\n")
	if _, err := Run(ctx, weak, Options{}, io.Discard); err == nil || !strings.Contains(err.Error(), "without a justification") {
		t.Fatalf("marker without a reason: %v", err)
	}
	write(all + "\n# mutation: equivalent 0123456789ab nothing\n")
	if _, err := Run(ctx, weak, Options{}, io.Discard); err == nil || !strings.Contains(err.Error(), "0123456789ab") {
		t.Fatalf("stale marker: %v", err)
	}
}

// TestMutateCompileErrorsApart: a mutant the compiler refuses (deleting
// the expression that binds a variable makes it unsafe) is counted as a
// compile error, not as a kill, and the score is over the other mutants.
func TestMutateCompileErrorsApart(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"t.rego": "package t\n\nx if {\n\tsome v in input.list\n\tv == 1\n}\n",
		"t_test.rego": "package t_test\n\nimport data.t\n\ntest_x if {\n\tt.x with input as {\"list\": [1]}\n}\n\n" +
			"test_not_x if {\n\tnot t.x with input as {\"list\": [2]}\n}\n",
	}
	for n, src := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	rep, err := Run(context.Background(), dir, Options{Workers: 1}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if rep.CompileErrors != 1 || rep.Killed != len(rep.Mutants)-1 || rep.Score != 100 {
		t.Fatalf("%+v\n%s", rep, out.String())
	}
	for _, m := range rep.Mutants {
		if m.Outcome == "compile-error" && (m.Kind != DeleteExpr || m.Original != "some v in input.list" || m.Reason == "") {
			t.Fatalf("compile error %+v", m)
		}
	}
	if !strings.Contains(out.String(), "1 compile errors (not counted)") {
		t.Fatal(out.String())
	}
}
