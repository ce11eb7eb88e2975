package policy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/tester"
)

// ErrTestsFailed is returned when a policy set's own Rego tests fail.
var ErrTestsFailed = errors.New("policy tests failed")

// ErrCoverage is returned by TestReport.RequireCoverage when the coverage
// of the policy modules is below the minimum asked for.
var ErrCoverage = errors.New("policy coverage below the minimum")

// DefaultMinCoverage is the coverage, in percent of the policy modules'
// lines, that `fleetapi policy test` requires unless told otherwise
// (--min-coverage): every line of the embedded set is reached by a test.
const DefaultMinCoverage = 100.0

// testTimeout bounds each Rego test. OPA's default of 5 s is a wall-clock
// bound that a loaded machine (a race-detector build under a load of 30 on
// 2 cores) exceeds for the tests that walk every account level, failing a
// policy set that is correct; a minute still stops a runaway test.
const testTimeout = time.Minute

// TestReport is the outcome of a policy set's *_test.rego tests.
type TestReport struct {
	Results []TestResult
	Passed  int
	Failed  int
	// Files is the line coverage, in percent, of each policy module (test
	// modules excluded); Coverage is the overall figure over those files.
	Files    map[string]float64
	Coverage float64
	// NotCovered lists "file:row" ranges of the policy modules that no test
	// reached.
	NotCovered []string
}

// TestResult is one Rego test.
type TestResult struct {
	// Name is "<package>.<rule>", e.g. "data.fleet.authz_test.test_expired".
	Name     string
	File     string
	Pass     bool
	Duration time.Duration
	// Failure says why a test did not pass ("" when it passed).
	Failure string
}

// RunTests runs the *_test.rego tests of dir ("" = the embedded set) with
// OPA's tester, writes one line per test and the coverage of each policy
// file and overall to w, and returns the report. The error wraps
// ErrTestsFailed when any test fails, or tells why the set did not load or
// compile.
func RunTests(ctx context.Context, dir string, w io.Writer) (TestReport, error) {
	set, err := loadPolicySet(dir)
	if err != nil {
		return TestReport{}, err
	}
	return runTests(ctx, set, w)
}

func runTests(ctx context.Context, set *policySet, w io.Writer) (TestReport, error) {
	all := set.all()
	cov := cover.New()
	ch, err := tester.NewRunner().
		SetDefaultRegoVersion(ast.RegoV1).
		SetTimeout(testTimeout).
		SetCoverageQueryTracer(cov).
		SetCoverageRuns([]cover.Kind{}).
		SetModules(all).
		RunTests(ctx, nil)
	if err != nil {
		return TestReport{}, fmt.Errorf("compile policy tests: %w", err)
	}
	report := TestReport{Files: map[string]float64{}}
	for r := range ch {
		tr := TestResult{
			Name:     r.Package + "." + r.Name,
			Pass:     r.Pass(),
			Duration: r.Duration,
		}
		if r.Location != nil {
			tr.File = r.Location.File
		}
		switch {
		case r.Error != nil:
			tr.Failure = "error: " + r.Error.Error()
		case r.Fail && r.FailedAt != nil:
			tr.Failure = fmt.Sprintf("failed at %s: %s", r.FailedAt.Location, r.FailedAt.Location.Text)
		case r.Fail:
			tr.Failure = "failed"
		case r.Skip:
			tr.Failure = "skipped"
		}
		if tr.Pass {
			report.Passed++
		} else {
			report.Failed++
		}
		report.Results = append(report.Results, tr)
	}
	sort.Slice(report.Results, func(i, j int) bool { return report.Results[i].Name < report.Results[j].Name })
	report.coverage(cov.Report(all), set)
	report.write(w)
	if report.Failed > 0 {
		var names []string
		for _, r := range report.Results {
			if !r.Pass {
				names = append(names, r.Name)
			}
		}
		return report, fmt.Errorf("%w: %d of %d: %s", ErrTestsFailed, report.Failed,
			report.Failed+report.Passed, strings.Join(names, ", "))
	}
	return report, nil
}

// RequireCoverage returns an error wrapping ErrCoverage, with the overall
// figure and the lines no test reached, when the report's coverage is
// below minPercent (0–100); nil otherwise. The coverage is compared as it
// is printed, to two decimals (a set reported at 99.74 % meets a minimum of
// 99.74), except that a set with any line not covered is below 100.
func (r TestReport) RequireCoverage(minPercent float64) error {
	shown := math.Round(r.Coverage*100) / 100
	if len(r.NotCovered) > 0 {
		shown = min(shown, 99.99)
	}
	if shown >= minPercent {
		return nil
	}
	notCovered := ""
	if len(r.NotCovered) > 0 {
		notCovered = "; not covered: " + strings.Join(r.NotCovered, ", ")
	}
	return fmt.Errorf("%w: %.2f%% < %.2f%%%s", ErrCoverage, shown, minPercent, notCovered)
}

// coverage fills the per-file and overall coverage of the policy modules.
func (r *TestReport) coverage(cr cover.Report, set *policySet) {
	var covered, notCovered int
	for name := range set.modules {
		fr := cr.Files[name]
		if fr == nil {
			r.Files[name] = 0
			continue
		}
		r.Files[name] = fr.Coverage
		covered += fr.CoveredLines
		notCovered += fr.NotCoveredLines
		for _, rng := range fr.NotCovered {
			r.NotCovered = append(r.NotCovered, fmt.Sprintf("%s:%d", name, rng.Start.Row))
		}
	}
	sort.Strings(r.NotCovered)
	if covered+notCovered > 0 {
		r.Coverage = 100 * float64(covered) / float64(covered+notCovered)
	}
}

func (r *TestReport) write(w io.Writer) {
	for _, t := range r.Results {
		if t.Pass {
			fmt.Fprintf(w, "PASS %s (%s)\n", t.Name, t.Duration.Round(time.Microsecond))
		} else {
			fmt.Fprintf(w, "FAIL %s: %s\n", t.Name, t.Failure)
		}
	}
	fmt.Fprintf(w, "%d passed, %d failed\n", r.Passed, r.Failed)
	files := make([]string, 0, len(r.Files))
	for f := range r.Files {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		fmt.Fprintf(w, "coverage %6.2f%% %s\n", r.Files[f], f)
	}
	for _, nc := range r.NotCovered {
		fmt.Fprintf(w, "not covered: %s\n", nc)
	}
	fmt.Fprintf(w, "coverage %6.2f%% overall (policy modules)\n", r.Coverage)
}
