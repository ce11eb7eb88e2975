package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ReloadResult is the outcome of a Reload that did not fail.
type ReloadResult struct {
	// Previous and Revision are the revisions before and after; they are
	// equal when the source had not changed.
	Previous string
	Revision string
	// Changed reports whether a new set was swapped in.
	Changed bool
	// Duration is the time taken to load, check and swap the set.
	Duration time.Duration
}

// Reload reads the engine's policy source again (Options.Dir, a bundle
// file, or Options.BundleURL with the ETag of the bundle in force), checks
// the set exactly as New does (buildSnapshot: compile, scope rules and
// resources, every scope rule translated for every account type, the
// set's own tests) and swaps it in atomically. Requests that pinned the
// old revision (Pin) finish on it; the next ones take the new one. A set
// that fails any check is refused: the error says why, it is logged with
// the trigger (e.g. "SIGHUP", "watch"), counted in
// fleet.policy.reloads{result="refused"}, and the old set keeps serving.
// A bundle URL that answers no bundle (a network error, a status other
// than 200 or 304) is not a refusal: it is logged as "policy bundle poll",
// counted with result="error", and retried at the next poll. Each
// distinct outcome of a bundle URL is logged and counted once, however
// many polls repeat it (reloadURL); a SIGHUP logs its outcome whatever
// came before. A bundle older than the one in force is refused
// (bundleOrder). A source that has not changed (same revision, or 304 Not
// Modified) swaps nothing. The embedded set never changes.
func (e *Engine) Reload(ctx context.Context, trigger string) (ReloadResult, error) {
	if e.opts.BundleURL != "" {
		// No lock across the fetch (reloadURL).
		return e.reloadURL(ctx, trigger)
	}
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	start := time.Now()
	prev := e.Revision()
	var set *policySet
	var err error
	if e.opts.Dir != "" {
		// Only a source that held still is loaded (loadStable); seen is
		// what was read, so a refused set is not retried until it changes.
		set, e.seen, err = e.loadStable(ctx)
		if err != nil && ctx.Err() != nil {
			return ReloadResult{Previous: prev, Revision: prev}, err // shutting down
		}
	} else {
		set, err = loadPolicySource("", nil)
	}
	if err != nil {
		return ReloadResult{Previous: prev, Revision: prev}, e.refuse(ctx, trigger, "", err)
	}
	return e.install(ctx, trigger, start, set)
}

// install checks set as New does and swaps it in, unless its revision is
// the one in force; it refuses (refuse) a set that fails a check or that
// is older than the bundle in force (bundleOrder). The caller holds
// reloadMu.
func (e *Engine) install(ctx context.Context, trigger string, start time.Time, set *policySet) (ReloadResult, error) {
	cur := e.cur.Load()
	prev := cur.revision
	rev := set.revision()
	if rev == prev {
		return ReloadResult{Previous: prev, Revision: prev}, nil
	}
	if err := e.bundleOrder(cur.set, set); err != nil {
		return ReloadResult{Previous: prev, Revision: prev}, e.refuse(ctx, trigger, rev, err)
	}
	s, err := e.buildSnapshot(ctx, set)
	if err != nil {
		return ReloadResult{Previous: prev, Revision: prev}, e.refuse(ctx, trigger, rev, err)
	}
	e.cur.Store(s)
	res := ReloadResult{Previous: prev, Revision: rev, Changed: true, Duration: time.Since(start)}
	e.reloads.Add(ctx, 1, metric.WithAttributes(attribute.String("result", "ok")))
	e.logger.LogAttrs(ctx, slog.LevelInfo, "policy reloaded",
		slog.String("trigger", trigger), slog.String("source", e.sourceName()),
		slog.String("previous_revision", prev), slog.String("policy_revision", rev),
		slog.Duration("duration", res.Duration))
	return res, nil
}

// refuse counts and logs a refused set and returns the error that says why.
func (e *Engine) refuse(ctx context.Context, trigger, rev string, err error) error {
	err = fmt.Errorf("policy reload refused (%s kept): %w", e.Revision(), err)
	e.reloads.Add(ctx, 1, metric.WithAttributes(attribute.String("result", "refused")))
	e.logger.LogAttrs(ctx, slog.LevelError, "policy reload refused",
		slog.String("trigger", trigger), slog.String("source", e.sourceName()),
		slog.String("refused_revision", rev), slog.String("policy_revision", e.Revision()),
		slog.String("error", err.Error()))
	return err
}

// sourceName names the engine's policy source in logs.
func (e *Engine) sourceName() string {
	if e.opts.BundleURL != "" {
		return e.opts.BundleURL
	}
	return dirName(e.opts.Dir)
}

// Watch reloads the policy when its source changes, until ctx ends. A
// directory or a bundle file is polled every interval: the names and
// contents of its files are hashed (no parsing), and a hash other than that
// of the set last read calls Reload (trigger "watch"), which loads the
// source only once it has held still (loadStable, the rule of every
// trigger: a deployment copying several files is not loaded half-way). A
// bundle URL is fetched every interval with the ETag of the bundle in force
// (trigger "poll"). A refused set is logged once per change. The embedded
// set is not watched. An interval of 0 or less returns at once.
func (e *Engine) Watch(ctx context.Context, interval time.Duration) {
	if interval <= 0 || (e.opts.Dir == "" && e.opts.BundleURL == "") {
		return
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if e.opts.BundleURL != "" {
			// Reload logs every outcome once (a refusal, a failed fetch).
			_, _ = e.Reload(ctx, "poll")
			continue
		}
		fp, err := sourceFingerprint(e.opts.Dir)
		if err != nil || fp == e.lastSeen() {
			continue
		}
		_, _ = e.Reload(ctx, "watch")
	}
}

// lastSeen is the fingerprint of the source when the set in force, or
// the last one refused, was read.
func (e *Engine) lastSeen() string {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	return e.seen
}

// sourceFingerprint hashes the files of a policy directory as the loader
// reads them (readPolicyFiles: hidden files and directories skipped), names
// and contents, or a bundle file.
func sourceFingerprint(src string) (string, error) {
	st, err := os.Stat(src)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		// Streamed, and no further than a bundle may be read: a huge
		// file costs neither memory nor more than MaxBundleSize of reading
		// (it is refused when loaded).
		f, err := os.Open(src)
		if err != nil {
			return "", err
		}
		defer f.Close()
		h := sha256.New()
		fmt.Fprintf(h, "%d\x00", st.Size())
		if _, err := io.Copy(h, io.LimitReader(f, MaxBundleSize+1)); err != nil {
			return "", err
		}
		return hex.EncodeToString(h.Sum(nil)), nil
	}
	files, err := readPolicyFiles(os.DirFS(src))
	if err != nil {
		return "", err
	}
	return filesHash(files), nil
}
