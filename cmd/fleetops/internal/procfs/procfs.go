// Package procfs reads the Linux /proc figures the fleetops runs print
// next to their measurements: the machine's load average, a process's CPU
// time and resident memory, and the children of a process. Elsewhere the
// readers answer "unknown" or an error.
package procfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// LoadAverage is the 1-, 5- and 15-minute load averages; empty when
// unknown.
type LoadAverage []string

// ReadLoadAverage reads /proc/loadavg.
func ReadLoadAverage() LoadAverage {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	return parseLoadAverage(string(b))
}

// parseLoadAverage reads the content of /proc/loadavg.
func parseLoadAverage(s string) LoadAverage {
	f := strings.Fields(s)
	if len(f) < 3 {
		return nil
	}
	return LoadAverage(f[:3])
}

// String is the three averages separated by spaces, or "unknown".
func (l LoadAverage) String() string {
	if len(l) < 3 {
		return "unknown"
	}
	return strings.Join(l, " ")
}

// OneMinute is the 1-minute average, or "?".
func (l LoadAverage) OneMinute() string {
	if len(l) < 3 {
		return "?"
	}
	return l[0]
}

// statFields returns the fields of a /proc/PID/stat line after the
// command name, which is in parentheses and may hold spaces and
// parentheses itself: the first is the state (field 3 of proc(5)), the
// second the parent's pid (4), the 12th utime (14), the 13th stime (15).
func statFields(s string) ([]string, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("no command name")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return nil, fmt.Errorf("%d fields after the command name, want 13 or more", len(f))
	}
	return f, nil
}

// clockTicks is the unit of utime and stime in /proc/PID/stat (USER_HZ,
// 100 on Linux).
const clockTicks = 100

// ProcessCPU returns the CPU time (user + system) process pid has used so
// far.
func ProcessCPU(pid int) (time.Duration, error) {
	path := fmt.Sprintf("/proc/%d/stat", pid)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	d, err := cpuOfStat(string(b))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// cpuOfStat is utime + stime of a /proc/PID/stat line.
func cpuOfStat(s string) (time.Duration, error) {
	f, err := statFields(s)
	if err != nil {
		return 0, err
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("utime %q, stime %q: not numbers", f[11], f[12])
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// SelfCPU returns the CPU time this process has used so far (0 when
// unknown).
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Children returns the pids of the processes whose parent is ppid.
func Children(ppid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // the process has gone
		}
		if parentOfStat(string(b)) != ppid {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path))); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// parentOfStat is the parent pid of a /proc/PID/stat line, -1 when it
// cannot be read.
func parentOfStat(s string) int {
	f, err := statFields(s)
	if err != nil {
		return -1
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return -1
	}
	return ppid
}
