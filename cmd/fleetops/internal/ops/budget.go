package ops

import (
	"math"
	"time"
)

// tokenBudget is the most 200s a token with limit requests per minute can
// get in d: its whole burst (limit) and the refill over d, rounded up.
// Every rate-limit check of the runs compares with it.
func tokenBudget(limit int, d time.Duration) int {
	return limit + int(math.Ceil(float64(limit)*d.Seconds()/60))
}

// authFailBudget is the failed-authentication budget of one address over
// a flood phase of length d (60 and one a second, as the guard allows),
// and the most 401s a flood of clients concurrent clients may still get:
// the guard looks at the budget before authenticating and takes from it
// after a failure, so whenever the budget has refilled by one, every
// request already past the look (one a client) may still fail.
func authFailBudget(d time.Duration, clients int) (budget, worst int) {
	secs := int(d.Seconds() + 0.5)
	budget = 60 + secs
	return budget, budget + clients*(1+secs)
}
