package main

import (
	"context"
	"errors"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ratelimitRetry is how long a replica stays on its local limits after a
// Redis failure (api/ratelimit.RetryInterval; nothing imports api).
const ratelimitRetry = 2 * time.Second

// privateRedis is a redis-server of the run's own on a free loopback port,
// so that stopping it touches nobody else's limits.
type privateRedis struct {
	addr string
	cmd  *exec.Cmd
	done chan struct{}
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startPrivateRedis starts redis-server on addr (a free port when empty).
func (e *env) startPrivateRedis(ctx context.Context, addr string) (*privateRedis, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("no redis-server for a private Redis")
	}
	if addr == "" {
		if addr, err = freePort(); err != nil {
			return nil, err
		}
	}
	_, port, _ := net.SplitHostPort(addr)
	dir := filepath.Join(e.work, "redis-"+port)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cmd := exec.Command(path, "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no", "--dir", dir,
		"--logfile", filepath.Join(dir, "redis.log"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &privateRedis{addr: addr, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	e.onClose(func() { p.stop() })
	for range 150 {
		if listening(addr) {
			return p, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-p.done:
			return nil, errors.New("redis-server exited at start")
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil, errors.New("private redis-server did not come up within 15 s")
}

func (p *privateRedis) stop() { stopProcess(p.cmd, p.done, 5*time.Second) }

// redisOutagePhase starts two more replicas on a private Redis, drives a
// small-limit token at both, stops that Redis for a while and starts it
// again (empty, as after a restart without persistence).
func redisOutagePhase(ctx context.Context, e *env, c *checks, dbURL string, tok token, limit, conc int, step time.Duration) error {
	rd, err := e.startPrivateRedis(ctx, "")
	if err != nil {
		return err
	}
	url := "redis://" + rd.addr + "/0"
	vars := map[string]string{"FLEET_DATABASE_URL": dbURL, "FLEET_REDIS_URL": url}
	x, err := e.startReplica(ctx, "replica-c", vars)
	if err != nil {
		return err
	}
	y, err := e.startReplica(ctx, "replica-d", vars)
	if err != nil {
		return err
	}
	e.logf("phase 3: token %d (limit %d/min) at replicas c and d on a private Redis %s; Redis stopped at %s, started again at %s",
		tok.ID, limit, rd.addr, step, 2*step)
	client := newClient(conc, "")
	rec := newRecorder()
	var (
		mu      sync.Mutex
		stage   atomic.Int32 // 0 Redis up, 1 down (until the replicas went back to it), 2 back
		ok      [3]int
		lats    [3][]time.Duration
		marks   [4]time.Time // stage starts, and the end
		next    atomic.Int64
		cycleWG sync.WaitGroup
		cycErr  error
	)
	// A request counts in the stage in which it was sent; a quarter of a
	// second between a stage's start and the change of Redis lets the
	// requests of the stage before finish first.
	const settle = 250 * time.Millisecond
	setStage := func(s int32) {
		mu.Lock()
		marks[s] = time.Now()
		mu.Unlock()
		stage.Store(s)
	}
	cycleWG.Add(1)
	go func() {
		defer cycleWG.Done()
		sleep := func(d time.Duration) bool {
			select {
			case <-ctx.Done():
				return false
			case <-time.After(d):
				return true
			}
		}
		if !sleep(step - settle) {
			return
		}
		setStage(1)
		if !sleep(settle) {
			return
		}
		rd.stop()
		e.logf("private Redis stopped")
		if !sleep(step) {
			return
		}
		setStage(2) // from the restart on, so that the fresh Redis's burst counts here
		if _, err := e.startPrivateRedis(ctx, rd.addr); err != nil {
			cycErr = err
			return
		}
		e.logf("private Redis started again (empty); the replicas return to it within %s", ratelimitRetry)
	}()
	reps := []*replica{x, y}
	setStage(0)
	drive(ctx, conc, 3*step+ratelimitRetry, 1_000_000, func(ctx context.Context, _ int) {
		r := reps[next.Add(1)%2]
		s := stage.Load()
		res := send(ctx, client, r.base(), call{method: http.MethodGet, path: "/api/v2/me", token: tok.Secret})
		rec.add(r.name, res, res.err == nil && (res.status == 200 || res.status == 429))
		rec.mark(r.name + " " + class(res))
		mu.Lock()
		defer mu.Unlock()
		if res.err == nil && res.status == http.StatusOK {
			ok[s]++
		}
		lats[s] = append(lats[s], res.latency)
	})
	marks[3] = time.Now()
	cycleWG.Wait()
	if cycErr != nil {
		return cycErr
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	budget := func(d time.Duration) int { return limit + int(math.Ceil(float64(limit)*d.Seconds()/60)) }
	secs := step.Seconds()
	e.printf("\nRedis outage under two replicas (private Redis %s; stopped at %.0f s, started again empty at %.0f s):\n", rd.addr, secs, 2*secs)
	rec.timeline(e.out, []string{x.name + " 2xx", x.name + " 429", y.name + " 2xx", y.name + " 429", "5xx", "error"}, 2, func(from, to int) string {
		switch {
		case from <= int(secs) && int(secs) <= to:
			return "← Redis stopped"
		case from <= int(2*secs) && int(2*secs) <= to:
			return "← Redis started"
		}
		return ""
	})
	dur := [3]time.Duration{marks[1].Sub(marks[0]), marks[2].Sub(marks[1]), marks[3].Sub(marks[2])}
	// Back: the restarted Redis is empty, so the token has a full burst
	// again; the replicas keep using their local buckets for up to
	// ratelimitRetry after their last failure, which refill meanwhile.
	fallbackRefill := int(math.Ceil(float64(limit) * (ratelimitRetry + settle).Seconds() / 60))
	bound := [3]int{budget(dur[0]), 2 * budget(dur[1]), budget(dur[2]) + 2*fallbackRefill}
	names := []string{"Redis up", "Redis down", "Redis back"}
	what := []string{"one shared budget", "a budget per replica", "a fresh shared budget + local refill for 2 s"}
	for i := range 3 {
		l := lats[i]
		sortDurations(l)
		e.printf("  %-10s %5.1f s: 200×%d (%s: ≤ %d)  p50 %s ms p99 %s ms max %s ms\n",
			names[i], dur[i].Seconds(), ok[i], what[i], bound[i], ms(pct(l, 50)), ms(pct(l, 99)), ms(pct(l, 100)))
	}
	_, st, errs := rec.totals()
	fivexx := 0
	for s, n := range st {
		if s >= 500 {
			fivexx += n
		}
	}
	c.expect(fivexx == 0 && errs == 0, "a Redis outage costs no 5xx and no failed request (%d 5xx, %d errors)", fivexx, errs)
	c.expect(ok[0] <= bound[0], "Redis up: one shared budget (%d ≤ %d)", ok[0], bound[0])
	c.expect(ok[1] <= bound[1], "Redis down: each replica limits on its own (%d ≤ %d)", ok[1], bound[1])
	c.expect(ok[2] <= bound[2], "Redis back: one shared budget again (%d ≤ %d)", ok[2], bound[2])
	e.printf("  (while Redis is down each replica limits from its own buckets: with N replicas a token gets up to N× its limit)\n")
	return nil
}
