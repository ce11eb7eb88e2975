package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeGoVersion: the Go version README.md requires is the go line of
// go.mod, the one source of truth (issue 19 item 23: the README said
// 1.26.5 while go.mod said 1.26.8).
func TestReadmeGoVersion(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+(?:\.\d+)?)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	got := regexp.MustCompile(`Go ≥ (\d+\.\d+(?:\.\d+)?)`).FindAllSubmatch(readme, -1)
	if len(got) == 0 {
		t.Fatal(`README.md names no "Go ≥" version`)
	}
	for _, g := range got {
		if string(g[1]) != string(m[1]) {
			t.Errorf("README.md requires Go ≥ %s, go.mod says go %s", g[1], m[1])
		}
	}
}

// TestObservabilityDocNamesEverySpanAndAttribute reads the spans the
// server starts (tracer.Start with a literal name) and the fleet
// attributes it sets (attribute.X("fleet.…") or attribute.Key("fleet.…"))
// from the Go sources, and checks that docs/observability.md names each
// one (issue 19 item 23: policy.manage and fleet.manage.action were
// missing); and that the decisions counter's row names both its labels.
func TestObservabilityDocNamesEverySpanAndAttribute(t *testing.T) {
	doc, err := os.ReadFile("../../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	span := regexp.MustCompile(`\.Start\([^,()]+(?:\(\))?, "([^"]+)"`)
	attr := regexp.MustCompile(`attribute\.(?:Key|String|Int|Int64|Bool|Float64|StringSlice|Int64Slice)\("((?:db\.)?fleet\.[a-z_.]+)"`)
	names := map[string]string{}
	for _, dir := range []string{"api", "api/metering", "api/ratelimit", "policy", "storage", "tenancy", "telemetry", "cmd/fleetapi"} {
		files, err := filepath.Glob(filepath.Join("../..", dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range span.FindAllSubmatch(src, -1) {
				names[string(m[1])] = "span, " + f
			}
			for _, m := range attr.FindAllSubmatch(src, -1) {
				names[string(m[1])] = "attribute, " + f
			}
		}
	}
	if names["policy.decide"] == "" || names["fleet.token.id"] == "" {
		t.Fatalf("the sources were not read: %v", names)
	}
	for name, where := range names {
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("docs/observability.md does not name the %s %q", where, name)
		}
	}
	row := regexp.MustCompile("(?m)^\\| `fleet_policy_decisions_total` \\|.*$").Find(doc)
	if row == nil || !strings.Contains(string(row), "`code`") || !strings.Contains(string(row), "`action`") {
		t.Errorf("the fleet_policy_decisions_total row does not name the labels code and action: %s", row)
	}
}

// TestReadmeNamesEveryCommand (issue 34): README.md's command table has a
// row for every command and every subcommand of a group (it lacked
// `fleetapi usage export`).
func TestReadmeNamesEveryCommand(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "\n## Commands\n")
	if !ok {
		t.Fatal("README.md has no Commands section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	var rows []string
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(l, "| `fleetapi ") {
			rows = append(rows, l)
		}
	}
	named := func(cmd string) bool {
		for _, r := range rows {
			if strings.Contains(r, "`fleetapi "+cmd+" ") || strings.Contains(r, "`fleetapi "+cmd+"`") {
				return true
			}
		}
		return false
	}
	grouped := map[string]bool{}
	for _, g := range groups() {
		grouped[g.name] = true
		for _, sub := range g.names() {
			if !named(g.name + " " + sub) {
				t.Errorf("README.md's command table has no row for fleetapi %s %s", g.name, sub)
			}
		}
	}
	for name := range commands() {
		if !grouped[name] && !named(name) {
			t.Errorf("README.md's command table has no row for fleetapi %s", name)
		}
	}
}
