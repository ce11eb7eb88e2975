package policy

import (
	"errors"
	"testing"
)

// TestRequireCoverage (issue 25 item 5): the minimum is compared with the
// coverage as printed (two decimals), and a set with a line not covered
// never meets 100 even when its figure rounds to 100.00.
func TestRequireCoverage(t *testing.T) {
	for _, c := range []struct {
		coverage   float64
		notCovered []string
		min        float64
		ok         bool
	}{
		{100, nil, 100, true},
		{99.7389, []string{"fleet/scope/scope.rego:88"}, 100, false},
		{99.7389, []string{"fleet/scope/scope.rego:88"}, 99.74, true},
		{99.7389, []string{"fleet/scope/scope.rego:88"}, 99.75, false},
		{99.996, []string{"fleet/scope/scope.rego:88"}, 100, false},
		{99.996, []string{"fleet/scope/scope.rego:88"}, 99.99, true},
		{0, nil, 0, true},
	} {
		err := TestReport{Coverage: c.coverage, NotCovered: c.notCovered}.RequireCoverage(c.min)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrCoverage)) {
			t.Errorf("coverage %v (not covered %v), minimum %v: %v, want ok %t", c.coverage, c.notCovered, c.min, err, c.ok)
		}
	}
}
