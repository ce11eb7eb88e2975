package ops

import (
	"fmt"
	"strings"
)

// checks prints each verdict of a run and remembers the failures.
type checks struct {
	e      *env
	failed []string
}

// expect prints PASS or FAIL for the claim what.
func (c *checks) expect(ok bool, format string, args ...any) {
	what := fmt.Sprintf(format, args...)
	verdict := "PASS"
	if !ok {
		verdict = "FAIL"
		c.failed = append(c.failed, what)
	}
	c.e.printf("  %s  %s\n", verdict, what)
}

// err is nil when every check passed.
func (c *checks) err() error {
	if len(c.failed) == 0 {
		return nil
	}
	return fmt.Errorf("%d check(s) failed: %s", len(c.failed), strings.Join(c.failed, "; "))
}
