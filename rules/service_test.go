package rules

import (
	"testing"
	"time"
)

// TestServiceState states each case of the §5 due computation (storage's
// dueRemaining, dueCriteria and dueState): remaining = interval − (current −
// last) per enabled criterion; expired when some remaining ≤ 0, soon when
// some remaining ≤ its *_left_num with *_left on, else "".
func TestServiceState(t *testing.T) {
	day := func(y int, m time.Month, d int) *time.Time {
		v := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		return &v
	}
	today := time.Date(2026, 3, 2, 15, 0, 0, 0, time.UTC)
	cases := []struct {
		name      string
		s         Service
		odo, engh int64
		today     time.Time
		want      string
	}{
		{name: "nothing_on", s: Service{OdoInterval: 1, OdoLast: 0}, odo: 100, want: ""},
		{name: "odo_off_ignores_overrun", s: Service{Odo: false, OdoInterval: 1000}, odo: 5000, want: ""},
		{name: "odo_plenty", s: Service{Odo: true, OdoInterval: 10000, OdoLast: 1000}, odo: 5000, want: ""},
		{name: "odo_one_left", s: Service{Odo: true, OdoInterval: 10000, OdoLast: 1000}, odo: 10999, want: ""},
		{name: "odo_zero_left_expired", s: Service{Odo: true, OdoInterval: 10000, OdoLast: 1000}, odo: 11000, want: "expired"},
		{name: "odo_overrun_expired", s: Service{Odo: true, OdoInterval: 10000, OdoLast: 1000}, odo: 20000, want: "expired"},
		{name: "odo_soon_at_threshold", s: Service{Odo: true, OdoInterval: 10000, OdoLast: 1000, OdoLeft: true, OdoLeftNum: 500}, odo: 10500, want: "soon"},
		{name: "odo_threshold_plus_one", s: Service{Odo: true, OdoInterval: 10000, OdoLast: 1000, OdoLeft: true, OdoLeftNum: 500}, odo: 10499, want: ""},
		{name: "odo_threshold_switch_off", s: Service{Odo: true, OdoInterval: 10000, OdoLast: 1000, OdoLeft: false, OdoLeftNum: 500}, odo: 10900, want: ""},
		{name: "odo_left_zero_is_expired_only", s: Service{Odo: true, OdoInterval: 100, OdoLeft: true, OdoLeftNum: 0}, odo: 100, want: "expired"},
		{name: "odo_left_without_odo", s: Service{Odo: false, OdoInterval: 100, OdoLeft: true, OdoLeftNum: 1000}, odo: 50, want: ""},
		{name: "odo_last_ahead_of_odometer", s: Service{Odo: true, OdoInterval: 100, OdoLast: 5000, OdoLeft: true, OdoLeftNum: 50}, odo: 0, want: ""},
		{name: "odo_interval_zero_expired", s: Service{Odo: true}, odo: 0, want: "expired"},
		{name: "engh_soon", s: Service{Engh: true, EnghInterval: 500, EnghLast: 100, EnghLeft: true, EnghLeftNum: 20}, engh: 590, want: "soon"},
		{name: "engh_expired", s: Service{Engh: true, EnghInterval: 500, EnghLast: 100}, engh: 600, want: "expired"},
		{name: "engh_off", s: Service{Engh: false, EnghInterval: 500}, engh: 600, want: ""},
		{name: "days_never_done_no_remaining", s: Service{Days: true, DaysInterval: 1, DaysLeft: true, DaysLeftNum: 100}, want: ""},
		{name: "days_plenty", s: Service{Days: true, DaysInterval: 30, DaysLast: day(2026, 2, 20)}, want: ""},
		{name: "days_soon", s: Service{Days: true, DaysInterval: 30, DaysLast: day(2026, 2, 1), DaysLeft: true, DaysLeftNum: 3}, want: "soon"},     // 29 days: 1 left
		{name: "days_last_day", s: Service{Days: true, DaysInterval: 30, DaysLast: day(2026, 2, 1)}, want: ""},                                     // 1 left
		{name: "days_expired_today", s: Service{Days: true, DaysInterval: 29, DaysLast: day(2026, 2, 1)}, want: "expired"},                         // 0 left
		{name: "days_counted_on_dates_not_hours", s: Service{Days: true, DaysInterval: 1, DaysLast: day(2026, 3, 1)}, want: "expired"},             // 15:00 the next day: 1 day
		{name: "days_today_is_zero", s: Service{Days: true, DaysInterval: 1, DaysLast: day(2026, 3, 2), DaysLeft: true, DaysLeftNum: 0}, want: ""}, // 1 left
		{name: "days_last_in_the_future", s: Service{Days: true, DaysInterval: 10, DaysLast: day(2026, 3, 12), DaysLeft: true, DaysLeftNum: 15}, want: ""},
		{name: "days_off", s: Service{Days: false, DaysInterval: 1, DaysLast: day(2000, 1, 1)}, want: ""},
		{name: "days_leap_year", s: Service{Days: true, DaysInterval: 366, DaysLast: day(2024, 3, 2)}, today: time.Date(2025, 3, 2, 0, 0, 0, 0, time.UTC), want: ""}, // 365 days
		// today is read in its own zone, as storage.NewDate does: 23:30 in
		// New York on March 1 is March 2 in UTC, but the day is March 1.
		{name: "days_today_in_its_zone", s: Service{Days: true, DaysInterval: 1, DaysLast: day(2026, 3, 1)}, today: time.Date(2026, 3, 1, 23, 30, 0, 0, time.FixedZone("EST", -5*3600)), want: ""},
		{name: "expired_beats_soon", s: Service{Odo: true, OdoInterval: 100, OdoLeft: true, OdoLeftNum: 50, Engh: true, EnghInterval: 10}, odo: 60, engh: 10, want: "expired"},
		{name: "soon_by_one_of_three", s: Service{Odo: true, OdoInterval: 1000, Engh: true, EnghInterval: 100, EnghLeft: true, EnghLeftNum: 10, Days: true, DaysInterval: 100, DaysLast: day(2026, 3, 1)}, odo: 1, engh: 95, want: "soon"},
		{name: "expired_by_days_only", s: Service{Odo: true, OdoInterval: 1000, Days: true, DaysInterval: 10, DaysLast: day(2026, 1, 1)}, odo: 1, want: "expired"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.today.IsZero() {
				c.today = today
			}
			if got := ServiceState(c.s, c.odo, c.engh, c.today); got != c.want {
				t.Errorf("ServiceState = %q, want %q (criteria %+v)", got, c.want, serviceRemaining(c.s, c.odo, c.engh, c.today))
			}
		})
	}
}
