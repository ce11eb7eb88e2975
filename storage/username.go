package storage

import (
	"fmt"
	"regexp"
)

// UsernamePattern is the grammar of a username (docs/design.md §9): 2 to 64
// characters, each an ASCII letter or digit, '.', '_' or '-', the first
// and the last a letter or digit. So "acme." and ".acme" are refused, and
// no username can hold a character that looks like another one (a
// Cyrillic "а", a full-width "Ａ", a combining accent): NFC is a no-op on
// every username the grammar admits. Usernames are unique compared
// case-insensitively after NFC: the database's unique index on
// lower(normalize(username, NFC)) (migration 20261220000002) refuses
// "Admin" and "ADMIN" beside "admin", for accounts made by any path.
var UsernamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}[A-Za-z0-9]$`)

// UsernameRule is UsernamePattern in words, for error messages.
const UsernameRule = "2 to 64 letters (A-Z, a-z), digits, '.', '_' or '-', starting and ending with a letter or digit; unique whatever the case"

// ValidUsername checks u against UsernamePattern. Its error names the
// username and the rule.
func ValidUsername(u string) error {
	if !UsernamePattern.MatchString(u) {
		return fmt.Errorf("username %q: want %s", u, UsernameRule)
	}
	return nil
}
