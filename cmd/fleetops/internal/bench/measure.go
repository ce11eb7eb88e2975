package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/procfs"
	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/stats"
)

// scenarioResult is one scenario's measurements.
type scenarioResult struct {
	name, role, request string
	api, floor          stats.Summary
	measuredAPI         bool
	measuredFloor       bool
	// check compares one API answer with one floor answer.
	check string
	// policy is the p50 of the cached Decide + Scope the API runs per
	// request, measured in this process on the same engine.
	policy time.Duration
	// serverCPU is the server process's CPU time per API request (with
	// --server-pid), clientCPU the harness's own per API request (the HTTP
	// client), floorCPU the harness's per floor call (the storage code,
	// bun and the driver): CPU time does not grow with the machine's load
	// as latency does.
	serverCPU, clientCPU, floorCPU time.Duration
	// load is the machine's 1-minute load average when the scenario
	// started: the harness shares the machine with the server and
	// PostgreSQL, and anything else running skews every figure.
	load string
	// rss is the server's peak resident memory during the API run (0 when
	// not sampled).
	rss int64
}

// measure checks that the API and the floor agree, times the policy
// step, then runs the API and the floor at the configured concurrency.
func (h *harness) measure(ctx context.Context, sc scenario) (scenarioResult, error) {
	res := scenarioResult{name: sc.name, role: sc.role, request: sc.request}
	token := h.tokens[sc.role]
	floorAnswer, err := sc.floor(ctx, 0)
	if err != nil {
		return res, fmt.Errorf("%s: floor: %w", sc.name, err)
	}
	res.check = fmt.Sprintf("floor %d", floorAnswer)
	res.load = procfs.ReadLoadAverage().OneMinute()
	if !h.cfg.NoAPI && sc.api != nil {
		body, err := h.do(ctx, token, sc.api(0), true)
		if err != nil {
			return res, fmt.Errorf("%s: %w", sc.name, err)
		}
		apiAnswer, err := sc.answer(body)
		if err != nil {
			return res, fmt.Errorf("%s: reading the API answer: %w", sc.name, err)
		}
		res.check = fmt.Sprintf("api %d, floor %d", apiAnswer, floorAnswer)
		if apiAnswer != floorAnswer {
			res.check += " MISMATCH"
		}
	}
	if res.policy, err = h.policyTime(ctx, sc); err != nil {
		return res, fmt.Errorf("%s: policy: %w", sc.name, err)
	}

	apiOp := func(ctx context.Context, n int64) error {
		_, err := h.do(ctx, token, sc.api(n), false)
		return err
	}
	floorOp := func(ctx context.Context, n int64) error {
		_, err := sc.floor(ctx, n)
		return err
	}
	// Request numbers continue across warm-up and measurement, so that
	// creates and ids do not repeat.
	offset := int64(1)
	shifted := func(op func(context.Context, int64) error) func(context.Context, int64) error {
		return func(ctx context.Context, n int64) error { return op(ctx, n+offset) }
	}
	if !h.cfg.NoAPI && sc.api != nil {
		warm := stats.Measure(ctx, h.warmup(), shifted(apiOp))
		offset += warm.Requests + int64(h.cfg.Concurrency)
		stopRSS := procfs.SamplePeakRSS(h.cfg.ServerPID, 50*time.Millisecond)
		server, client := startCPU(h.cfg.ServerPID), startCPU(0)
		res.api = stats.Measure(ctx, h.measured(), shifted(apiOp))
		if h.cfg.ServerPID != 0 {
			res.serverCPU = server.perRequest(res.api.Requests)
		}
		res.clientCPU = client.perRequest(res.api.Requests)
		res.rss = stopRSS()
		res.measuredAPI = true
		offset += res.api.Requests + int64(h.cfg.Concurrency)
	}
	if !h.cfg.NoFloor {
		warm := stats.Measure(ctx, h.warmup(), shifted(floorOp))
		offset += warm.Requests + int64(h.cfg.Concurrency)
		floorCPU := startCPU(0)
		res.floor = stats.Measure(ctx, h.measured(), shifted(floorOp))
		res.floorCPU = floorCPU.perRequest(res.floor.Requests)
		res.measuredFloor = true
	}
	return res, nil
}

// policyRounds is how many cached Decide + Scope pairs policyTime runs.
const policyRounds = 2000

// policyTime returns the median time of the API's two policy calls for the
// scenario's input (Decide, then Scope), from the warm cache.
func (h *harness) policyTime(ctx context.Context, sc scenario) (time.Duration, error) {
	times := make([]time.Duration, 0, policyRounds)
	for i := range policyRounds + 100 {
		t0 := time.Now()
		if _, err := h.engine.Decide(ctx, sc.input); err != nil {
			return 0, err
		}
		if _, err := h.engine.Scope(ctx, sc.input, sc.resource); err != nil {
			return 0, err
		}
		if i >= 100 { // the first rounds fill the cache
			times = append(times, time.Since(t0))
		}
	}
	return stats.Percentile(times, 50), nil
}

// warmup bounds an unmeasured run before a measurement: the configured
// concurrency for --warmup.
func (h *harness) warmup() stats.Bounds {
	return stats.Bounds{Workers: h.cfg.Concurrency, Duration: h.cfg.Warmup}
}

// measured bounds a measurement: the configured concurrency for
// --duration or --requests, whichever ends first.
func (h *harness) measured() stats.Bounds {
	return stats.Bounds{Workers: h.cfg.Concurrency, Duration: h.cfg.Duration, Requests: h.cfg.Requests}
}
