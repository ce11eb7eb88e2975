package importfile

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/uptrace/bun/driver/pgdriver"
)

// keyDetailRe reads the DETAIL of a unique or foreign-key violation:
// `Key (account_id, passenger_assign_id)=(3, AB-1001) already exists.`
var keyDetailRe = regexp.MustCompile(`^Key \((.+)\)=\((.*)\) (already exists|is not present in table "([^"]+)")\.?$`)

// constraintWords says in the words of an import file what rule of the
// schema a record broke, from the database's error: the fields and values
// of a duplicate key, the field of a failed check or a missing value,
// never a constraint name. ok is false for other errors.
func constraintWords(err error) (string, bool) {
	var pgErr pgdriver.Error
	if !errors.As(err, &pgErr) {
		return "", false
	}
	table, column := pgErr.Field('t'), pgErr.Field('c')
	switch pgErr.Field('C') {
	case "23505", "23503":
		m := keyDetailRe.FindStringSubmatch(pgErr.Field('D'))
		if m == nil {
			if pgErr.Field('C') == "23505" {
				return "another record has the same key", true
			}
			return "refers to a record that does not exist", true
		}
		fields := duplicateKey(m[1], m[2])
		if m[3] == "already exists" {
			if strings.Contains(m[1], "account_id, ") || strings.Contains(m[1], ", account_id") {
				return fmt.Sprintf("%s is already taken by another record of the account", fields), true
			}
			return fmt.Sprintf("%s is already taken by another record", fields), true
		}
		return fmt.Sprintf("%s does not exist in %s", fields, m[4]), true
	case "23514":
		// A column check is named <table>_<column>_check by PostgreSQL.
		name := strings.TrimSuffix(strings.TrimPrefix(pgErr.Field('n'), table+"_"), "_check")
		if name != "" && name != pgErr.Field('n') {
			return fmt.Sprintf("%s is out of range", name), true
		}
		return "a value is out of range", true
	case "23502":
		return fmt.Sprintf("%s is required", column), true
	case "22001":
		return "a value is too long", true
	case "22003":
		return "a number is out of range", true
	}
	return "", false
}

// duplicateKey pairs the columns and values of a key, leaving out account_id
// (the record names its account already): `passenger_assign_id "AB-1001"`.
func duplicateKey(columns, values string) string {
	cols := strings.Split(columns, ", ")
	vals := strings.Split(values, ", ")
	if len(cols) != len(vals) {
		return "(" + columns + ")"
	}
	var parts []string
	for i, c := range cols {
		if c == "account_id" && len(cols) > 1 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %q", c, vals[i]))
	}
	return strings.Join(parts, ", ")
}

// violation is a rule of the schema that a record broke, told in the words
// of constraintWords. It matches its sentinel (storage.ErrInvalid or
// storage.ErrConflict) with errors.Is and keeps the driver's error in its
// chain for logs, without showing it in its message.
type violation struct {
	words    string
	sentinel error
	cause    error
}

func (v *violation) Error() string { return v.words }

// Unwrap returns the sentinel and the driver's error.
func (v *violation) Unwrap() []error { return []error{v.sentinel, v.cause} }
