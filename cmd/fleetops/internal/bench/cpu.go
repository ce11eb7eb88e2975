package bench

import (
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/procfs"
)

// cpuMeter measures the CPU time of a process over a run: the server's
// with a pid, this process's (the floor's Go side) without.
type cpuMeter struct {
	pid   int
	start time.Duration
}

// startCPU starts measuring the CPU time of process pid (0: this one).
func startCPU(pid int) cpuMeter {
	m := cpuMeter{pid: pid}
	m.start = m.now()
	return m
}

// now is the process's CPU time so far (0 when unknown).
func (m cpuMeter) now() time.Duration {
	if m.pid == 0 {
		return procfs.SelfCPU()
	}
	d, err := procfs.ProcessCPU(m.pid)
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
