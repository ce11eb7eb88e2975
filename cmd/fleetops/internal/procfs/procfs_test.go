package procfs

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestLoadAverage(t *testing.T) {
	for _, tc := range []struct{ in, all, one string }{
		{"0.52 1.10 2.00 3/456 7890\n", "0.52 1.10 2.00", "0.52"},
		{"1 2 3", "1 2 3", "1"},
		{"1 2", "unknown", "?"},
		{"", "unknown", "?"},
	} {
		l := parseLoadAverage(tc.in)
		if l.String() != tc.all || l.OneMinute() != tc.one {
			t.Errorf("%q: %q, %q; want %q, %q", tc.in, l.String(), l.OneMinute(), tc.all, tc.one)
		}
	}
	if l := ReadLoadAverage(); l.String() == "unknown" {
		t.Errorf("no load average on this machine (Linux has /proc/loadavg)")
	}
}

// stat is a /proc/PID/stat line with comm, ppid, utime and stime.
func stat(comm, ppid, utime, stime string) string {
	f := []string{"S", ppid, "1", "1", "0", "-1", "4194560", "100", "0", "0", "0", utime, stime, "0", "0", "20", "0", "1"}
	return "1234 (" + comm + ") " + strings.Join(f, " ") + "\n"
}

// TestStat enumerates command names that break a naive split: spaces,
// parentheses, a closing parenthesis followed by a space.
func TestStat(t *testing.T) {
	for _, comm := range []string{"postgres", "post gres", "a) b", "((x))", ") 9 9 9", ""} {
		line := stat(comm, "42", "250", "150")
		if d, err := cpuOfStat(line); err != nil || d != 4*time.Second {
			t.Errorf("comm %q: cpu %s, %v; want 4s", comm, d, err)
		}
		if p := parentOfStat(line); p != 42 {
			t.Errorf("comm %q: parent %d, want 42", comm, p)
		}
	}
	for _, bad := range []string{"", "1234 postgres S 1", "1234 (x) S 1 2 3", stat("x", "1", "u", "2")} {
		if _, err := cpuOfStat(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if p := parentOfStat(stat("x", "pp", "1", "1")); p != -1 {
		t.Errorf("unreadable parent: %d", p)
	}
}

func TestRSS(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"Name:\tx\nVmPeak:\t  9 kB\nVmRSS:\t   1024 kB\n", 1 << 20, true},
		{"VmRSS: 3 kB", 3 << 10, true},
		{"Name:\tx\n", 0, false},
		{"VmRSS:\n", 0, false},
		{"VmRSS: lots kB\n", 0, false},
	} {
		got, err := rssOfStatus(strings.NewReader(tc.in))
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("%q: %d, %v; want %d (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestSelf reads this process's own figures through each reader.
func TestSelf(t *testing.T) {
	pid := os.Getpid()
	if _, err := ProcessCPU(pid); err != nil {
		t.Errorf("ProcessCPU: %v", err)
	}
	if v, err := RSS(pid); err != nil || v <= 0 {
		t.Errorf("RSS: %d, %v", v, err)
	}
	if peak := SamplePeakRSS(pid, time.Millisecond)(); peak <= 0 {
		t.Errorf("SamplePeakRSS: %d", peak)
	}
	if peak := SamplePeakRSS(0, time.Millisecond)(); peak != 0 {
		t.Errorf("SamplePeakRSS without a pid: %d", peak)
	}
	found := false
	for _, c := range Children(os.Getppid()) {
		found = found || c == pid
	}
	if !found {
		t.Errorf("Children(%d) does not list this process %d", os.Getppid(), pid)
	}
}
