package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sampleRSS starts sampling the server's resident memory (VmRSS of
// /proc/PID/status) every 50 ms and returns a function that stops the
// sampling and returns the peak in bytes. Without --server-pid it samples
// nothing and the peak is 0.
func (h *harness) sampleRSS() func() int64 {
	if h.cfg.ServerPID == 0 {
		return func() int64 { return 0 }
	}
	path := fmt.Sprintf("/proc/%d/status", h.cfg.ServerPID)
	var (
		mu   sync.Mutex
		peak int64
	)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if v, err := readRSS(path); err == nil {
				mu.Lock()
				peak = max(peak, v)
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// readRSS reads VmRSS (in bytes) from a /proc/PID/status file.
func readRSS(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "VmRSS:") {
			continue
		}
		fields := strings.Fields(strings.TrimPrefix(line, "VmRSS:"))
		if len(fields) < 1 {
			break
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, err
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("%s: no VmRSS", path)
}
