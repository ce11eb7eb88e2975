package rules

import (
	"math"
	"strconv"
)

// parseNumber parses a decimal number: an optional sign, digits with an
// optional fraction (or a fraction alone: ".5"), an optional exponent
// ("1e3"), nothing else (no space, no hexadecimal, no underscore, no
// "Inf" or "NaN"), finite.
func parseNumber(s string) (float64, bool) {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < len(s) && isDigit(s[i]) {
		i, digits = i+1, digits+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			i, digits = i+1, digits+1
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		exp := 0
		for i < len(s) && isDigit(s[i]) {
			i, exp = i+1, exp+1
		}
		if exp == 0 {
			return 0, false
		}
	}
	if i != len(s) {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, false
	}
	return v, true
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// formatNumber writes a number as a reading or a rule would: "97.5", "90".
func formatNumber(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// attrNumber is an attribute's value as a number: a JSON number (float64,
// finite) or a string that parseNumber reads.
func attrNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsInf(x, 0) && !math.IsNaN(x)
	case string:
		return parseNumber(x)
	}
	return 0, false
}
