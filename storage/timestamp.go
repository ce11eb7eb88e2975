package storage

import (
	"fmt"
	"regexp"
	"time"
)

// timestampForm is the RFC 3339 profile ParseTimestamp accepts: seconds
// always, at most six fractional digits after ".", upper-case "T" and "Z",
// a numeric offset with a colon.
var timestampForm = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})$`)

// ParseTimestamp parses an RFC 3339 timestamp that a PostgreSQL timestamptz
// holds exactly: YYYY-MM-DDTHH:MM:SS, then optionally "." and 1 to 6
// digits (microseconds, PostgreSQL's precision: more digits would be
// truncated into another instant), then "Z" or an offset ±HH:MM (hours
// 00–15, minutes 00–59: PostgreSQL refuses offsets past 15:59, and no
// time zone uses one past 14:00). The day must exist, the clock runs from 00:00:00
// to 23:59:59 (no 24:00, no leap second 60, which PostgreSQL would read as
// the next minute), and the instant, in UTC, must lie in the years
// MinYear–MaxYear.
func ParseTimestamp(s string) (time.Time, error) {
	bad := fmt.Errorf("timestamp %q: want RFC 3339 YYYY-MM-DDTHH:MM:SS[.ffffff] and Z or ±HH:MM, "+
		"from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z", s)
	if !timestampForm.MatchString(s) {
		return time.Time{}, bad
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, bad
	}
	if zone := s[len(s)-1]; zone != 'Z' {
		// Go takes offsets up to +99:99; PostgreSQL stops at 15:59.
		if hh, mm := s[len(s)-5:len(s)-3], s[len(s)-2:]; hh > "15" || mm > "59" {
			return time.Time{}, bad
		}
	}
	if y := t.UTC().Year(); y < MinYear || y > MaxYear {
		return time.Time{}, bad
	}
	return t, nil
}
