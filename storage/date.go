package storage

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"time"
)

// DateLayout is the wire and SQL form of a Date.
const DateLayout = "2006-01-02"

// MinYear and MaxYear bound the years of the dates and timestamps fleetapi
// accepts: the four-digit years of DateLayout and RFC 3339 that PostgreSQL
// reads back as the same day. Year 0 is refused by PostgreSQL (its
// calendar has no year 0: 1 BC is followed by 1 AD), and Go would write it
// as "0000".
const (
	MinYear = 1
	MaxYear = 9999
)

// Date is a calendar day (a PostgreSQL date), held as midnight UTC. It
// encodes as "YYYY-MM-DD" in JSON and in SQL; use *Date for a nullable column
// (nil encodes as JSON null).
type Date struct {
	time.Time
}

// NewDate returns the day of t (in t's location) as a Date.
func NewDate(t time.Time) Date {
	y, m, d := t.Date()
	return Date{time.Date(y, m, d, 0, 0, 0, 0, time.UTC)}
}

// ParseDate parses "YYYY-MM-DD", a day of the proleptic Gregorian calendar
// from 0001-01-01 to 9999-12-31: exactly two digits of month and day, a
// day that exists in its month, no sign, no space, nothing else.
func ParseDate(s string) (Date, error) {
	t, err := time.Parse(DateLayout, s)
	if err != nil || len(s) != len(DateLayout) || t.Year() < MinYear {
		return Date{}, fmt.Errorf("date %q: want YYYY-MM-DD from 0001-01-01 to 9999-12-31", s)
	}
	return Date{t}, nil
}

// String returns the date as "YYYY-MM-DD".
func (d Date) String() string { return d.Time.Format(DateLayout) }

// MarshalText encodes the date as "YYYY-MM-DD".
func (d Date) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText decodes "YYYY-MM-DD".
func (d *Date) UnmarshalText(b []byte) error {
	v, err := ParseDate(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalJSON encodes the date as the JSON string "YYYY-MM-DD".
func (d Date) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON decodes the JSON string "YYYY-MM-DD".
func (d *Date) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("date: want a string \"YYYY-MM-DD\"")
	}
	return d.UnmarshalText([]byte(s))
}

// Value stores the date as "YYYY-MM-DD" (implements driver.Valuer).
func (d Date) Value() (driver.Value, error) { return d.String(), nil }

// Scan reads a PostgreSQL date (implements sql.Scanner).
func (d *Date) Scan(src any) error {
	switch v := src.(type) {
	case time.Time:
		*d = NewDate(v)
		return nil
	case string:
		return d.UnmarshalText([]byte(v))
	case []byte:
		return d.UnmarshalText(v)
	case nil:
		*d = Date{}
		return nil
	}
	return fmt.Errorf("storage.Date: cannot scan %T", src)
}
