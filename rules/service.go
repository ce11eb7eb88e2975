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
func ServiceState(s Service, odometer, engineHours int64, today time.Time) string {
	return ""
}
