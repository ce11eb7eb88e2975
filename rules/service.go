package rules

import "time"

// Service is what the §5 due computation reads of a service record.
type Service struct {
	ID                  int64
	Name                string
	Odo, Engh, Days     bool
	OdoInterval         int64
	OdoLast             int64
	OdoLeft             bool
	OdoLeftNum          int64
	EnghInterval        int64
	EnghLast            int64
	EnghLeft            bool
	EnghLeftNum         int64
	DaysInterval        int64
	DaysLast            *time.Time // a date (UTC midnight); nil: never
	DaysLeft            bool
	DaysLeftNum         int64
	NotifyServiceExpire bool
}

// ServiceState is the §5 state of a service record for a device at
// odometer km and engine hours on the day today: "expired" (some remaining
// ≤ 0), "soon" (some remaining ≤ its enabled threshold) or "".
//
// It is storage's due computation (storage/due.go: dueRemaining, dueCriteria,
// dueState) in Go: a criterion's remaining is interval − (current − last)
// when its switch is on, and none when it is off; days counts the calendar
// days from days_last to today (each read as the day of its own location,
// as storage.NewDate does), and a days criterion without days_last has no
// remaining. A remaining ≤ 0 is expired; a remaining ≤ its *_left_num with
// its *_left switch on is soon. NotifyServiceExpire is not read: the caller
// decides whether a state entered notifies.
func ServiceState(s Service, odometer, engineHours int64, today time.Time) string {
	state := ""
	for _, c := range serviceRemaining(s, odometer, engineHours, today) {
		switch {
		case !c.on:
		case c.remaining <= 0:
			return serviceExpired
		case c.left && c.remaining <= c.leftNum:
			state = serviceSoon
		}
	}
	return state
}

// The states ServiceState returns (storage.DueExpired, storage.DueSoon).
const (
	serviceExpired = "expired"
	serviceSoon    = "soon"
)

// criterion is one criterion of the due computation: on when its remaining
// is known (switch on; days: days_last known).
type criterion struct {
	on        bool
	remaining int64
	left      bool
	leftNum   int64
}

// serviceRemaining is the odo, engh and days criteria of s, in that order.
func serviceRemaining(s Service, odometer, engineHours int64, today time.Time) [3]criterion {
	c := [3]criterion{
		{on: s.Odo, remaining: s.OdoInterval - (odometer - s.OdoLast), left: s.OdoLeft, leftNum: s.OdoLeftNum},
		{on: s.Engh, remaining: s.EnghInterval - (engineHours - s.EnghLast), left: s.EnghLeft, leftNum: s.EnghLeftNum},
		{on: s.Days && s.DaysLast != nil, left: s.DaysLeft, leftNum: s.DaysLeftNum},
	}
	if c[2].on {
		c[2].remaining = s.DaysInterval - (dayNumber(today) - dayNumber(*s.DaysLast))
	}
	return c
}

// dayNumber is the calendar day of t (in t's location) as days since
// 1970-01-01.
func dayNumber(t time.Time) int64 {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
}
