package bench

import (
	"context"
	"fmt"
	"strings"
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
	// variant marks a measurement of another path (RLS, OPA sidecar) in
	// the floor's place; sidecarCPU is the sidecar's CPU time per call.
	variant    bool
	sidecarCPU time.Duration
}

// warmDraws offsets the draws of a warm-up from those of the
// measurement, so that the warm-up does not preload the measured queries.
const warmDraws = 1 << 40

// checkNumbers numbers the requests of the check, apart from those of the
// measurements.
const checkNumbers = 1 << 50

// measure checks that the API and the floor agree, times the policy
// step, then runs the API and the floor at the configured concurrency.
func (h *harness) measure(ctx context.Context, sc scenario) (scenarioResult, error) {
	res := scenarioResult{name: sc.name, role: sc.role, request: sc.request, variant: sc.api == nil && sc.reference != nil}
	token := h.tokens[sc.role]
	if err := h.check(ctx, sc, token, &res); err != nil {
		return res, err
	}
	res.load = procfs.ReadLoadAverage().OneMinute()
	var err error
	if res.policy, err = h.policyTime(ctx, sc); err != nil {
		return res, fmt.Errorf("%s: policy: %w", sc.name, err)
	}

	apiOp := func(ctx context.Context, c call) error {
		r := sc.api(c)
		tok := r.token
		if tok == "" {
			tok = token
		}
		_, err := h.do(ctx, tok, r, false)
		return err
	}
	floorOp := func(ctx context.Context, c call) error {
		_, err := sc.floor(ctx, c)
		return err
	}
	// Request numbers continue across warm-up and measurement, so that
	// creates and ids do not repeat; draws restart at 0 for each
	// measurement, API and floor alike.
	offset := int64(1)
	numbered := func(op func(context.Context, call) error, draws int64) func(context.Context, int64) error {
		return func(ctx context.Context, n int64) error { return op(ctx, call{k: n + draws, n: n + offset}) }
	}
	if !h.cfg.NoAPI && sc.api != nil {
		warm := stats.Measure(ctx, h.warmup(), numbered(apiOp, warmDraws))
		offset += warm.Requests + int64(h.cfg.Concurrency)
		stopRSS := procfs.SamplePeakRSS(h.cfg.ServerPID, 50*time.Millisecond)
		server, client := startCPU(h.cfg.ServerPID), startCPU(0)
		res.api = stats.Measure(ctx, h.measured(), numbered(apiOp, 0))
		if h.cfg.ServerPID != 0 {
			res.serverCPU = server.perRequest(res.api.Requests)
		}
		res.clientCPU = client.perRequest(res.api.Requests)
		res.rss = stopRSS()
		res.measuredAPI = true
		offset += res.api.Requests + int64(h.cfg.Concurrency)
	}
	if !h.cfg.NoFloor {
		warm := stats.Measure(ctx, h.warmup(), numbered(floorOp, warmDraws))
		offset += warm.Requests + int64(h.cfg.Concurrency)
		floorCPU, sidecar := startCPU(0), startCPU(sc.sidecarPID)
		res.floor = stats.Measure(ctx, h.measured(), numbered(floorOp, 0))
		res.floorCPU = floorCPU.perRequest(res.floor.Requests)
		if sc.sidecarPID != 0 {
			res.sidecarCPU = sidecar.perRequest(res.floor.Requests)
		}
		res.measuredFloor = true
	}
	return res, nil
}

// check compares, for the first draws of the scenario, the API's answers
// (or a variant's) with fleetapi's floor, and writes the outcome into
// res.check; a disagreement is marked MISMATCH, not an error, so that the
// whole table is still written.
func (h *harness) check(ctx context.Context, sc scenario, token string, res *scenarioResult) error {
	checks := max(sc.checks, 1)
	var floorFirst int64
	mismatches := 0
	for k := range int64(checks) {
		c := call{k: k, n: checkNumbers + k}
		floorAnswer, err := sc.floor(ctx, c)
		if err != nil {
			return fmt.Errorf("%s: floor: %w", sc.name, err)
		}
		if k == 0 {
			floorFirst = floorAnswer
			res.check = fmt.Sprintf("floor %d", floorAnswer)
		}
		other, label := int64(0), ""
		switch {
		case sc.reference != nil:
			if other, err = sc.reference(ctx, c); err != nil {
				return fmt.Errorf("%s: fleetapi floor: %w", sc.name, err)
			}
			label = "fleetapi floor"
		case !h.cfg.NoAPI && sc.api != nil:
			r := sc.api(c)
			tok := r.token
			if tok == "" {
				tok = token
			}
			body, err := h.do(ctx, tok, r, true)
			if err != nil {
				return fmt.Errorf("%s: %w", sc.name, err)
			}
			if other, err = sc.answer(body); err != nil {
				return fmt.Errorf("%s: reading the API answer: %w", sc.name, err)
			}
			label = "api"
		default:
			continue
		}
		if k == 0 {
			res.check = fmt.Sprintf("%s %d, floor %d", label, other, floorFirst)
		}
		if other != floorAnswer {
			mismatches++
			res.check += fmt.Sprintf(" (draw %d: %s %d, floor %d)", k, label, other, floorAnswer)
		}
	}
	if checks > 1 && !strings.HasPrefix(res.check, "floor ") {
		res.check += fmt.Sprintf("; %d draws compared", checks)
	}
	if mismatches > 0 {
		res.check += " MISMATCH"
	}
	return nil
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
