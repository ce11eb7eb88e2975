package rules

import (
	"fmt"
	"time"
)

// weekDays maps the week_days names to their days.
var weekDays = map[string]time.Weekday{
	"mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday, "thu": time.Thursday,
	"fri": time.Friday, "sat": time.Saturday, "sun": time.Sunday,
}

// window is when a rule may fire, read on the local clock: days a bit set
// per time.Weekday (0: every day); from and to minutes of the day, both
// inclusive (all: the whole day). from > to spans midnight.
type window struct {
	days     uint8
	all      bool
	from, to int
}

// parseWindow parses week_days (exact lower-case names "mon".."sun"; empty:
// every day; a repeated name is harmless) and day_time ("HH:MM" from 00:00
// to 23:59, both or neither).
func parseWindow(days []string, dt DayTime) (window, string) {
	var w window
	for _, d := range days {
		wd, ok := weekDays[d]
		if !ok {
			return window{}, fmt.Sprintf("week_days %q is not a day name (mon, tue, wed, thu, fri, sat, sun)", d)
		}
		w.days |= 1 << wd
	}
	if dt.From == "" && dt.To == "" {
		w.all = true
		return w, ""
	}
	if dt.From == "" || dt.To == "" {
		return window{}, "day_time needs both from and to, or neither"
	}
	var ok bool
	if w.from, ok = parseHHMM(dt.From); !ok {
		return window{}, fmt.Sprintf("day_time from %q is not HH:MM (00:00 to 23:59)", dt.From)
	}
	if w.to, ok = parseHHMM(dt.To); !ok {
		return window{}, fmt.Sprintf("day_time to %q is not HH:MM (00:00 to 23:59)", dt.To)
	}
	return w, ""
}

// parseHHMM reads exactly "HH:MM", 00:00 to 23:59, as minutes of the day.
func parseHHMM(s string) (int, bool) {
	if len(s) != 5 || s[2] != ':' || !isDigit(s[0]) || !isDigit(s[1]) || !isDigit(s[3]) || !isDigit(s[4]) {
		return 0, false
	}
	h := int(s[0]-'0')*10 + int(s[1]-'0')
	m := int(s[3]-'0')*10 + int(s[4]-'0')
	if h > 23 || m > 59 {
		return 0, false
	}
	return h*60 + m, true
}

// local is a time read on the account's clock: its day of the week and
// minute of the day (the wall clock's, so 03:00 on a day that skips
// 02:00-03:00 is minute 180).
type local struct {
	day    time.Weekday
	minute int
}

// localTime reads t in loc.
func localTime(t time.Time, loc *time.Location) local {
	t = t.In(loc)
	return local{day: t.Weekday(), minute: t.Hour()*60 + t.Minute()}
}

// admits reports whether the window holds the local time l: its day (the
// day of l itself, also in the part of a window after midnight) and its
// minute.
func (w window) admits(l local) bool {
	if w.days != 0 && w.days&(1<<l.day) == 0 {
		return false
	}
	if w.all {
		return true
	}
	if w.from <= w.to {
		return w.from <= l.minute && l.minute <= w.to
	}
	return l.minute >= w.from || l.minute <= w.to
}
