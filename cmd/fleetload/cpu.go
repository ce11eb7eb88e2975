package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is the unit of utime and stime in /proc/PID/stat (USER_HZ,
// 100 on Linux).
const clockTicks = 100

// processCPU returns the CPU time (user + system) the process pid has used
// so far, from /proc/PID/stat (Linux).
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: state is field 3, utime 14, stime 15.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// selfCPU returns the CPU time this process has used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuMeter measures the CPU time of a process over a run: the server's
// with a pid, this process's (the floor's Go side) without.
type cpuMeter struct {
	pid   int
	start time.Duration
}

func startCPU(pid int) cpuMeter {
	m := cpuMeter{pid: pid}
	m.start = m.now()
	return m
}

func (m cpuMeter) now() time.Duration {
	if m.pid == 0 {
		return selfCPU()
	}
	d, err := processCPU(m.pid)
	if err != nil {
		return 0
	}
	return d
}

// perRequest returns the CPU time used since start divided by requests.
func (m cpuMeter) perRequest(requests int64) time.Duration {
	if requests == 0 {
		return 0
	}
	return (m.now() - m.start) / time.Duration(requests)
}
