package webhook

import (
	"fmt"
	"strings"
	"time"
)

// DefaultSchedule is the delay before each retry of a delivery that failed
// (docs/design.md §14): after the first attempt fails the next comes 5 s
// later, and so on; when the list is spent the delivery has failed. Callers
// must not modify it (ParseSchedule("") returns a copy).
var DefaultSchedule = []time.Duration{
	5 * time.Second,
	5 * time.Minute,
	30 * time.Minute,
	2 * time.Hour,
	5 * time.Hour,
	10 * time.Hour,
	10 * time.Hour,
}

// Bounds of a configured schedule (FLEET_WEBHOOK_RETRIES).
const (
	MaxRetries    = 20
	MaxRetryDelay = 7 * 24 * time.Hour
)

// ParseSchedule reads FLEET_WEBHOOK_RETRIES: a comma-separated list of Go
// durations ("10s,1m,1h") that replaces DefaultSchedule. Each delay is > 0 and
// at most MaxRetryDelay, and there are at most MaxRetries of them. An empty or
// blank value means the default (a copy of DefaultSchedule).
func ParseSchedule(s string) ([]time.Duration, error) {
	if strings.TrimSpace(s) == "" {
		return append([]time.Duration(nil), DefaultSchedule...), nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > MaxRetries {
		return nil, fmt.Errorf("FLEET_WEBHOOK_RETRIES: %d delays, at most %d", len(parts), MaxRetries)
	}
	out := make([]time.Duration, 0, len(parts))
	for i, p := range parts {
		p = strings.TrimSpace(p)
		d, err := time.ParseDuration(p)
		if err != nil {
			return nil, fmt.Errorf("FLEET_WEBHOOK_RETRIES: delay %d (%q) is not a duration such as 30s or 2h", i+1, p)
		}
		if d <= 0 || d > MaxRetryDelay {
			return nil, fmt.Errorf("FLEET_WEBHOOK_RETRIES: delay %d (%s) must be > 0 and at most %s", i+1, p, MaxRetryDelay)
		}
		out = append(out, d)
	}
	return out, nil
}
