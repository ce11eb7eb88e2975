package main

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// scenarioResult is one scenario's measurements.
type scenarioResult struct {
	name, role, request string
	api, floor          stats
	measuredAPI         bool
	measuredFloor       bool
	// check compares one API answer with one floor answer.
	check string
	// policy is the p50 of the cached Decide + Scope the API runs per
	// request, measured in this process on the same engine.
	policy time.Duration
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
	if !h.cfg.NoAPI {
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
	if !h.cfg.NoAPI {
		warm := load(ctx, h.cfg.Concurrency, h.cfg.Warmup, 0, shifted(apiOp))
		offset += warm.Requests + int64(h.cfg.Concurrency)
		sampler := h.sampleRSS()
		res.api = load(ctx, h.cfg.Concurrency, h.cfg.Duration, h.cfg.Requests, shifted(apiOp))
		res.rss = sampler()
		res.measuredAPI = true
		offset += res.api.Requests + int64(h.cfg.Concurrency)
	}
	if !h.cfg.NoFloor {
		warm := load(ctx, h.cfg.Concurrency, h.cfg.Warmup, 0, shifted(floorOp))
		offset += warm.Requests + int64(h.cfg.Concurrency)
		res.floor = load(ctx, h.cfg.Concurrency, h.cfg.Duration, h.cfg.Requests, shifted(floorOp))
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
	slices.Sort(times)
	return percentile(times, 50), nil
}
