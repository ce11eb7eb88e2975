package webhook_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/webhook"
)

func TestParseSchedule(t *testing.T) {
	got, err := webhook.ParseSchedule("")
	if err != nil || !slices.Equal(got, webhook.DefaultSchedule) {
		t.Fatalf("ParseSchedule(\"\") = %v, %v; want the default", got, err)
	}
	got[0] = time.Hour
	if webhook.DefaultSchedule[0] != 5*time.Second {
		t.Fatal("ParseSchedule(\"\") returned DefaultSchedule itself")
	}
	want := []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}
	if !slices.Equal(webhook.DefaultSchedule, want) {
		t.Errorf("DefaultSchedule = %v, want docs/design.md §14's %v", webhook.DefaultSchedule, want)
	}
	for in, want := range map[string][]time.Duration{
		"1s":                             {time.Second},
		" 10s , 1m,1h30m ":               {10 * time.Second, time.Minute, 90 * time.Minute},
		"168h":                           {7 * 24 * time.Hour},
		"250ms,250ms":                    {250 * time.Millisecond, 250 * time.Millisecond},
		strings.Repeat("1s,", 19) + "1s": slices.Repeat([]time.Duration{time.Second}, 20),
	} {
		got, err := webhook.ParseSchedule(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseSchedule(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"0s", "-1s", "5", "1d", "168h1s", "1s,,1s", "1s,", ",", "1s;2s", "abc", strings.Repeat("1s,", 20) + "1s"} {
		if got, err := webhook.ParseSchedule(bad); err == nil {
			t.Errorf("ParseSchedule(%q) = %v, want an error", bad, got)
		}
	}
}

func TestParseAllowNets(t *testing.T) {
	for in, want := range map[string][]string{
		"":                               nil,
		" ":                              nil,
		"127.0.0.0/8":                    {"127.0.0.0/8"},
		"10.1.2.3/8, 192.168.1.5":        {"10.0.0.0/8", "192.168.1.5/32"},
		"fd00::/8,::1":                   {"fd00::/8", "::1/128"},
		"169.254.169.254/32 , fe80::/10": {"169.254.169.254/32", "fe80::/10"},
	} {
		got, err := webhook.ParseAllowNets(in)
		if err != nil {
			t.Errorf("ParseAllowNets(%q): %v", in, err)
			continue
		}
		var s []string
		for _, p := range got {
			s = append(s, p.String())
		}
		if !slices.Equal(s, want) {
			t.Errorf("ParseAllowNets(%q) = %v, want %v", in, s, want)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "10.0.0", "localhost", "10.0.0.0/8,", ",", "fe80::1%eth0", "fe80::%eth0/64", "10.0.0.0/-1", "2130706433", "0x7f000001", "127.1"} {
		if got, err := webhook.ParseAllowNets(bad); err == nil {
			t.Errorf("ParseAllowNets(%q) = %v, want an error", bad, got)
		}
	}
}
