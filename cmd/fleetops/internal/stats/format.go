package stats

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Millis formats d in milliseconds with digits decimals ("12.3" for
// 12.34 ms and 1 digit).
func Millis(d time.Duration, digits int) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', digits, 64)
}

// Seconds formats d in seconds with one decimal.
func Seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64)
}

// Micros formats d in whole microseconds, "-" for none (d ≤ 0).
func Micros(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', 0, 64)
}

// Rate is n per second of elapsed, 0 when nothing elapsed.
func Rate(n int64, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return float64(n) / elapsed.Seconds()
}

// Counts formats a count map as "k×n" pairs ordered by the keys' names,
// separated by spaces ("200×5 429×2"); key names a key.
func Counts[K comparable](m map[K]int, key func(K) string) string {
	byName := make(map[string]int, len(m))
	for k, n := range m {
		byName[key(k)] += n
	}
	parts := make([]string, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		parts = append(parts, fmt.Sprintf("%s×%d", name, byName[name]))
	}
	return strings.Join(parts, " ")
}
