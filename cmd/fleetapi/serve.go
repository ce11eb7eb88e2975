package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"time"

	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/metric"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/api/metering"
	"github.com/fleetapi/fleetapi/api/ratelimit"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/telemetry"
	"github.com/fleetapi/fleetapi/tenancy"
	"github.com/fleetapi/fleetapi/webhook"
)

func runServe(ctx context.Context, args []string, getenv func(string) string, con console) error {
	cmd := newCommand("serve", "[flags]", `Run the API server until SIGINT or SIGTERM, then shut down gracefully. Pending
migrations are applied first unless --no-migrate. The server refuses to start
while its database holds an active demo token (one whose secret is published in
the demo data) unless --allow-demo-tokens. The JSON log goes to standard output,
with the decision log when FLEET_DECISION_LOG=stdout. SIGHUP reloads the policy
(as does a change of the watched directory or bundle); a set that fails its
checks is refused and the one in force keeps serving.`)
	cfg, err := defaultConfig(getenv)
	if err != nil {
		return err
	}
	cfg.flags(cmd.fs)
	cmd.fs.BoolVar(&cfg.NoMigrate, "no-migrate", false, "do not apply pending migrations at start-up")
	cmd.fs.BoolVar(&cfg.AllowDemoTokens, "allow-demo-tokens", false, "serve even though demo tokens, whose secrets are public, work in the database (demo databases only)")
	if err := cmd.parseArgs(args, con, 0, 0); err != nil {
		return err
	}
	return serve(ctx, cfg, getenv, con, nil)
}

// openDatabase creates the database if needed, opens it with telemetry,
// checks that it answers and applies the migrations unless told not to.
func openDatabase(ctx context.Context, cfg config, tel *telemetry.Providers) (*bun.DB, error) {
	url := cfg.databaseURL()
	if err := storage.EnsureDatabase(ctx, url); err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	opts := storage.Options{MaxOpenConns: cfg.DBMaxConns}
	if len(cfg.ReadURLs) > 0 {
		opts.Target = storage.TargetPrimary
	}
	if tel != nil {
		opts.TracerProvider = tel.Tracer
		opts.MeterProvider = tel.Meter
	}
	db := storage.Open(url, opts)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("database: %w", storage.Translate(err))
	}
	if !cfg.NoMigrate {
		if err := storage.Migrate(ctx, db); err != nil {
			db.Close()
			return nil, err
		}
	}
	return db, nil
}

// openReplicas opens a pool to each read replica (FLEET_DATABASE_READ_URLS)
// and starts the replica set's health checker. Nothing is required of a
// replica at start-up: one that does not answer yet is skipped until it
// does. The returned function stops the checker and closes the pools.
func openReplicas(ctx context.Context, cfg config, primary *bun.DB, log *slog.Logger, tel *telemetry.Providers) (*storage.Replicas, func(), error) {
	dbs := make([]*bun.DB, len(cfg.ReadURLs))
	for i, u := range cfg.ReadURLs {
		dbs[i] = storage.Open(u, storage.Options{MaxOpenConns: cfg.DBMaxConns, Target: storage.TargetReplica,
			TracerProvider: tel.Tracer, MeterProvider: tel.Meter})
	}
	closeAll := func() {
		for _, db := range dbs {
			db.Close()
		}
	}
	reps, err := storage.NewReplicas(primary, dbs, storage.ReplicaOptions{MaxLag: cfg.ReplicaMaxLag, Interval: cfg.ReplicaCheckInterval,
		MeterProvider: tel.Meter, Logger: log})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	// The first check before the first request, so that a caught-up
	// replica takes reads from the start.
	reps.Check(ctx)
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); reps.Run(runCtx) }()
	usable := 0
	for i := range reps.Len() {
		if reps.Usable(i) {
			usable++
		}
	}
	log.Info("read replicas", slog.Int("replicas", reps.Len()), slog.Int("usable", usable),
		slog.Duration("max_lag", cfg.ReplicaMaxLag), slog.Duration("check_interval", cfg.ReplicaCheckInterval))
	return reps, func() { cancel(); <-done; closeAll() }, nil
}

// decisionLog opens the decision log destination: stdout, a file, or off.
func decisionLog(dest string, stdout io.Writer) (io.Writer, func() error, error) {
	switch dest {
	case "", "off":
		return nil, func() error { return nil }, nil
	case "stdout", "-":
		return stdout, func() error { return nil }, nil
	}
	f, err := os.OpenFile(dest, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("decision log: %w", err)
	}
	return f, f.Close, nil
}

// newLimiter returns the rate limiter: shared through Redis when
// FLEET_REDIS_URL is set (falling back to per-replica limits while Redis is
// down), in-process otherwise.
func newLimiter(cfg config, log *slog.Logger, tel *telemetry.Providers) (ratelimit.Limiter, func(), error) {
	local := ratelimit.NewLocal()
	if cfg.RedisURL == "" {
		return local, func() {}, nil
	}
	client, err := ratelimit.NewRedisClient(cfg.RedisURL)
	if err != nil {
		return nil, nil, fmt.Errorf("FLEET_REDIS_URL: %w", err)
	}
	fallbacks, err := tel.Meter.Meter("github.com/fleetapi/fleetapi/cmd/fleetapi").Int64Counter("fleet.ratelimit.redis_fallbacks",
		metric.WithDescription("Rate-limit answers given by the per-replica fallback because Redis was unavailable."))
	if err != nil {
		return nil, nil, err
	}
	fallbacks.Add(context.Background(), 0) // on /metrics at zero before the first fallback, for alerts
	lim := ratelimit.NewRedis(client, local, log)
	lim.OnFallback = func() { fallbacks.Add(context.Background(), 1) }
	return lim, func() { client.Close() }, nil
}

// serveOps serves the operational endpoints on their own address.
func serveOps(addr string, h http.Handler, log *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics address: %w", err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
		MaxHeaderBytes: maxHeaderBytes, DisableGeneralOptionsHandler: true, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() { _ = hs.Serve(ln) }()
	log.Info("operations endpoints listening", slog.String("addr", ln.Addr().String()))
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	}, nil
}

// maxHeaderBytes bounds a request's header block. net/http reads up to
// 4 KiB more before it answers 431 itself (docs/decisions.md, "The HTTP
// edge").
const maxHeaderBytes = 32 << 10

// apiHTTPServer is the http.Server of the API address. What net/http
// answers itself, before any handler and so without the error envelope
// (a malformed request line or header, a header block over
// maxHeaderBytes, an unsupported Transfer-Encoding or protocol version,
// an Expect other than 100-continue), is listed in docs/decisions.md;
// the one such answer a field turns off, the 200 to "OPTIONS *", is
// turned off so that the handler answers it (404 NOT_FOUND).
func apiHTTPServer(h http.Handler, cfg config, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:                      h,
		ReadHeaderTimeout:            cfg.ReadHeaderTimeout,
		ReadTimeout:                  15 * time.Second,
		WriteTimeout:                 30 * time.Second,
		IdleTimeout:                  60 * time.Second,
		MaxHeaderBytes:               maxHeaderBytes,
		DisableGeneralOptionsHandler: true,
		ErrorLog:                     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// serve runs the API until ctx is cancelled, then shuts down in order: stop
// accepting, let in-flight requests finish within the shutdown timeout,
// flush telemetry, close the pool. When ready is not nil it is called with
// the listening address.
func serve(ctx context.Context, cfg config, getenv func(string) string, con console, ready func(addr string)) error {
	if err := cfg.checkTenantBound(); err != nil {
		return err
	}
	// The server's JSON log is its output: stdout, as docs/observability.md
	// says, with the decision log when FLEET_DECISION_LOG=stdout; both
	// through one LogWriter, written every FLEET_LOG_FLUSH_INTERVAL.
	out := telemetry.NewLogWriter(con.out, cfg.LogFlushInterval)
	defer out.Close() //nolint:errcheck // stdout: nowhere to report to
	log := telemetry.NewLogger(out, slog.LevelInfo)
	tel, err := telemetry.Setup(ctx, getenv)
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tel.Shutdown(sctx); err != nil {
			log.Error("telemetry shutdown", slog.Any("error", err))
		}
	}()

	if addr := getenv("FLEET_PPROF_ADDR"); addr != "" {
		_, stopPprof, err := startPprof(addr, log)
		if err != nil {
			return err
		}
		defer stopPprof(context.Background()) //nolint:errcheck // best effort at exit
	}

	db, err := openDatabase(ctx, cfg, tel)
	if err != nil {
		return err
	}
	defer db.Close()
	if !cfg.AllowDemoTokens {
		if err := refuseDemoTokens(ctx, db, databaseName(cfg.databaseURL())); err != nil {
			return err
		}
	}

	dlog, closeLog, err := decisionLog(cfg.DecisionLog, out)
	if err != nil {
		return err
	}
	defer closeLog()
	popts, err := cfg.policySource()
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	popts.DecisionLog = dlog
	bi, _ := debug.ReadBuildInfo()
	popts.DecisionLogLabels = map[string]string{"service": "fleetapi", "fleetapi_version": versionFrom(bi).Version}
	popts.TracerProvider = tel.Tracer
	popts.MeterProvider = tel.Meter
	popts.Schema = storage.Schema()
	popts.Logger = log
	engine, err := policy.New(ctx, popts)
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	// Hot reload (docs/design.md §10): SIGHUP, the watched directory or bundle
	// file, the polled bundle URL.
	stopReload := startPolicyReload(ctx, engine, cfg, log)
	defer stopReload()

	limiter, closeLimiter, err := newLimiter(cfg, log, tel)
	if err != nil {
		return err
	}
	defer closeLimiter()

	store := storage.NewStore(db).WithQuotas(cfg.Quotas)
	if off := getenv("FLEET_PAGING_OFF"); off != "" {
		// For the paired A/B of the paging shapes only (scripts/bench-ab.sh).
		if store, err = store.WithShapesOff(off); err != nil {
			return err
		}
	}
	if len(cfg.ReadURLs) > 0 {
		reps, stopReplicas, err := openReplicas(ctx, cfg, db, log, tel)
		if err != nil {
			return err
		}
		defer stopReplicas()
		store = store.WithReplicas(reps)
	}
	auth := &tenancy.Authenticator{Store: store}
	authSync, stopAuthCache, err := startAuthCache(ctx, cfg, auth, log, tel)
	if err != nil {
		return err
	}
	defer stopAuthCache()
	meter, stopMeter, err := startMetering(ctx, cfg, store, log, tel)
	if err != nil {
		return err
	}
	// Registered after the database's Close, so it runs before it: the
	// last flush follows the HTTP server's shutdown (every request
	// answered and counted) on every way out of serve.
	defer stopMeter()
	defer startCounterFold(ctx, cfg.CounterFoldInterval, store, log)()
	defer startPurge(ctx, cfg.PurgeInterval, cfg.TokenRetention, store, log)()
	defer startClock(ctx, cfg.ClockInterval, store, log)()
	wakeSender, stopSender, err := startSender(ctx, cfg, engine, log, tel)
	if err != nil {
		return err
	}
	defer stopSender()
	wakeups, stopWakes := startNotificationWakes(ctx, cfg, log, wakeSender)
	defer stopWakes()
	defer startPositionsMaintenance(ctx, cfg.PositionsRetention, store, log)()
	srv, err := api.New(api.Config{
		Wakeups:            wakeups,
		StreamHeartbeat:    cfg.StreamHeartbeat,
		StreamsPerAccount:  cfg.StreamsPerAccount,
		Auth:               auth,
		AuthSync:           authSync,
		Policy:             engine,
		Store:              store,
		TracerProvider:     tel.Tracer,
		MeterProvider:      tel.Meter,
		Propagator:         tel.Propagator,
		Logger:             log,
		Limiter:            limiter,
		RateLimit:          cfg.RateLimit,
		AuthFailureLimit:   cfg.AuthFailureLimit,
		TrustedProxies:     cfg.TrustedProxies,
		RequestTimeout:     cfg.RequestTimeout,
		Usage:              meter,
		TenantMaxInFlight:  cfg.TenantMaxInFlight,
		TenantQueueTimeout: cfg.TenantQueueTimeout,
		PositionsRetention: cfg.PositionsRetention,
		Ready:              store,
		MetricsHandler:     tel.MetricsHandler,
		SeparateOps:        cfg.MetricsAddr != "",
		WebhookKeys:        cfg.WebhookKeys,
		WebhookURLs:        webhook.NewClient(cfg.WebhookURLs),
	})
	if err != nil {
		return err
	}
	if cfg.MetricsAddr != "" {
		stopOps, err := serveOps(cfg.MetricsAddr, srv.OpsHandler(), log)
		if err != nil {
			return err
		}
		defer stopOps()
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	hs := apiHTTPServer(srv.Handler(), cfg, log)
	log.Info("listening", slog.String("addr", ln.Addr().String()), slog.String("policy_revision", engine.Revision()))
	if ready != nil {
		ready(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Drain: /readyz turns 503 so that load balancers stop routing here,
	// while requests are still served for the drain delay.
	srv.Drain()
	log.Info("draining", slog.Duration("delay", cfg.DrainDelay))
	time.Sleep(cfg.DrainDelay)
	log.Info("shutting down", slog.Duration("timeout", cfg.ShutdownTimeout))
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// startCounterFold folds the row counters' stripes (storage.FoldCounters)
// every interval until the returned function is called (which waits for
// a fold in progress to stop); an interval of 0 starts nothing. Replicas
// fold at the same time without harm: each skips the rows another holds.
// A failed fold is logged and tried again at the next tick.
func startCounterFold(ctx context.Context, interval time.Duration, store *storage.Store, log *slog.Logger) func() {
	if interval == 0 {
		return func() {}
	}
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-fctx.Done():
				return
			case <-tick.C:
			}
			n, err := store.FoldCounters(fctx)
			switch {
			case err != nil && fctx.Err() == nil:
				log.Warn("counters: fold failed; next at the next interval", slog.Any("error", err))
			case n > 0:
				log.Info("counters: stripes folded", slog.Int64("rows", n))
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// startPurge purges expired idempotency keys and the tokens dead for
// longer than retention (storage.Store.Purge) every interval until the
// returned function is called (which waits for a purge in progress to
// stop); an interval of 0 starts nothing. Replicas purge at the same time
// without harm: each skips the rows another holds. A failed purge is
// logged and tried again at the next tick.
func startPurge(ctx context.Context, interval, retention time.Duration, store *storage.Store, log *slog.Logger) func() {
	if interval == 0 {
		return func() {}
	}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-pctx.Done():
				return
			case <-tick.C:
			}
			n, err := store.Purge(pctx, retention)
			switch {
			case err != nil && pctx.Err() == nil:
				log.Warn("purge failed; next at the next interval", slog.Any("error", err))
			case n.IdempotencyKeys > 0 || n.Tokens > 0:
				log.Info("purged", slog.Int64("idempotency_keys", n.IdempotencyKeys), slog.Int64("tokens", n.Tokens))
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// startMetering starts the usage meter (docs/design.md §12): its flushes every
// FLEET_USAGE_FLUSH_INTERVAL until serve returns. The returned function
// stops them and makes the last flush (bounded by one interval plus 10 s,
// retried once), after the HTTP server has answered its last request.
func startMetering(ctx context.Context, cfg config, store *storage.Store, log *slog.Logger, tel *telemetry.Providers) (*metering.Meter, func(), error) {
	meter, err := metering.New(store, metering.Options{Interval: cfg.UsageFlushInterval, MaxEntries: cfg.UsageMaxEntries,
		Logger: log, MeterProvider: tel.Meter, TracerProvider: tel.Tracer})
	if err != nil {
		return nil, nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		meter.Run(rctx)
	}()
	return meter, func() {
		cancel()
		<-done
		fctx, stop := context.WithTimeout(context.WithoutCancel(ctx), meter.Interval()+10*time.Second)
		defer stop()
		err := meter.Flush(fctx)
		if err != nil {
			err = meter.Flush(fctx)
		}
		if err != nil {
			log.Error("usage: the last flush failed; the usage counted since the previous flush is lost",
				slog.Int("keys", meter.Pending()), slog.Any("error", err))
			return
		}
		log.Info("usage flushed")
	}, nil
}

// positionsMaintenancePeriod is how often a replica tries the positions
// maintenance (storage.MaintainPositions); the lease outlives it, so the
// replica that holds it keeps it while it lives.
const positionsMaintenancePeriod = time.Hour

// startPositionsMaintenance runs the positions maintenance at start and
// every hour until serve returns, on the one replica that holds its lease
// (fleet_leases): partitions ahead, partitions and notifications past
// FLEET_POSITIONS_RETENTION dropped. The returned function stops it.
func startPositionsMaintenance(ctx context.Context, retention time.Duration, store *storage.Store, log *slog.Logger) func() {
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var id [8]byte
	_, _ = rand.Read(id[:])
	holder := hex.EncodeToString(id[:])
	maintain := func() {
		m, err := store.MaintainPositions(mctx, holder, positionsMaintenancePeriod+10*time.Minute, retention, time.Now())
		switch {
		case err != nil && mctx.Err() == nil:
			log.Warn("positions maintenance failed; next in an hour", slog.Any("error", err))
		case m.Ran && (m.Made > 0 || m.Dropped > 0 || m.NotificationsDeleted > 0):
			log.Info("positions maintenance", slog.Int("partitions_made", m.Made), slog.Int("partitions_dropped", m.Dropped),
				slog.Int64("notifications_deleted", m.NotificationsDeleted))
		}
	}
	go func() {
		defer close(done)
		maintain()
		tick := time.NewTicker(positionsMaintenancePeriod)
		defer tick.Stop()
		for {
			select {
			case <-mctx.Done():
				return
			case <-tick.C:
				maintain()
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
