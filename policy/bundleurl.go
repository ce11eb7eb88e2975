package policy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// DefaultBundleTimeout bounds a fetch of a bundle URL when
// Options.BundleTimeout is 0.
const DefaultBundleTimeout = 10 * time.Second

// urlState is what an Engine remembers of its bundle URL, guarded by
// Engine.urlMu.
type urlState struct {
	// etag is the ETag of the last body received (sent as If-None-Match);
	// etagRefused says that body was refused.
	etag        string
	etagRefused bool
	// inForce is the SHA-256 of the body of the bundle in force: the same
	// body again is unchanged without being read (a server without ETag).
	inForce string
	// outcome keys the last failure logged and counted (a fetch error,
	// or the SHA-256 of a refused body), and outcomeErr is its error: a
	// poll with the same outcome is neither logged nor counted again.
	// "" after a success.
	outcome    string
	outcomeErr error
	// refreshed is when the source last confirmed the set in force.
	refreshed time.Time
	// fetches numbers the fetches as they start; settled is the number of
	// the latest fetch whose bundle was checked. A fetch that ends after
	// a later one has settled is stale news and is dropped: fetches run
	// without a lock and may overtake one another.
	fetches, settled uint64
}

// fetched is the answer of a bundle URL: 304 Not Modified, or a body of
// at most MaxBundleSize bytes, kept in chunks (no buffer that doubles as
// it grows), or too large (tooLarge, the body not kept).
type fetched struct {
	notModified bool
	etag        string
	sum         string // hex SHA-256 of the body
	chunks      [][]byte
	tooLarge    error
}

// load reads the bundle fetched (loadPolicyBundle).
func (f fetched) load(e *Engine) (*policySet, error) {
	if f.tooLarge != nil {
		return nil, f.tooLarge
	}
	rs := make([]io.Reader, len(f.chunks))
	for i, c := range f.chunks {
		rs[i] = bytes.NewReader(c)
	}
	return loadPolicyBundle(io.MultiReader(rs...), e.opts.BundleURL, e.opts.BundleVerification)
}

// fetchFirst fetches and reads the bundle at start (New): any failure is
// New's error.
func (e *Engine) fetchFirst(ctx context.Context) (*policySet, error) {
	f, err := e.fetchBundle(ctx, "")
	if err != nil {
		return nil, err
	}
	if f.notModified {
		return nil, errors.New("policy bundle: the server answered 304 Not Modified to the first request")
	}
	set, err := f.load(e)
	if err != nil {
		return nil, err
	}
	e.urlMu.Lock()
	e.url = urlState{etag: f.etag, inForce: f.sum, refreshed: e.now()}
	e.urlMu.Unlock()
	return set, nil
}

// reloadURL is Reload for a bundle URL. The fetch holds no lock (its
// deadline is Options.BundleTimeout), so a hanging server delays nothing
// but this call; reloadMu is taken only to check and swap a bundle that
// arrived. Each distinct outcome is logged and counted once: a poll whose
// answer is the failure already reported is neither logged nor counted —
// the same fetch error is returned again, while the same refused body or
// a 304 for the refused ETag returns nil (nothing new was checked). A
// SIGHUP (any trigger other than "poll") fetches and reports anyway.
func (e *Engine) reloadURL(ctx context.Context, trigger string) (ReloadResult, error) {
	start := time.Now()
	prev := e.Revision()
	unchanged := ReloadResult{Previous: prev, Revision: prev}
	e.urlMu.Lock()
	etag := e.url.etag
	if trigger != "poll" && e.url.etagRefused {
		etag = "" // an operator's reload reads the refused bundle again
	}
	e.url.fetches++
	gen := e.url.fetches
	e.urlMu.Unlock()
	f, err := e.fetchBundle(ctx, etag)
	if err != nil {
		if ctx.Err() != nil {
			return unchanged, err // shutting down
		}
		// No bundle was received (network error, another status):
		// nothing to refuse; retried at the next poll.
		if e.newOutcome(trigger, "error "+err.Error(), err) {
			e.reloads.Add(ctx, 1, metric.WithAttributes(attribute.String("result", "error")))
			e.logger.LogAttrs(ctx, slog.LevelWarn, "policy bundle poll",
				slog.String("trigger", trigger), slog.String("source", e.sourceName()),
				slog.String("policy_revision", prev), slog.String("error", err.Error()))
		}
		return unchanged, err
	}
	if f.notModified {
		e.urlMu.Lock()
		defer e.urlMu.Unlock()
		if e.url.etagRefused {
			// The server still serves the bundle refused: not a refresh,
			// and nothing new to report.
			return unchanged, nil
		}
		e.url.refreshed, e.url.outcome, e.url.outcomeErr = e.now(), "", nil
		return unchanged, nil
	}
	e.urlMu.Lock()
	e.url.etag = f.etag
	if f.sum == e.url.inForce {
		e.url.etagRefused = false
		e.url.refreshed, e.url.outcome, e.url.outcomeErr = e.now(), "", nil
		e.urlMu.Unlock()
		return unchanged, nil
	}
	key := "bundle " + f.sum
	if trigger == "poll" && key == e.url.outcome {
		// The bundle refused already, again (a server without ETag):
		// nothing new to report, as for a 304.
		e.url.etagRefused = true
		e.urlMu.Unlock()
		return unchanged, nil
	}
	e.urlMu.Unlock()

	set, loadErr := f.load(e) // parsed without a lock
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	e.urlMu.Lock()
	overtaken := gen < e.url.settled
	e.url.settled = max(e.url.settled, gen)
	e.urlMu.Unlock()
	if overtaken {
		return ReloadResult{Previous: e.Revision(), Revision: e.Revision()}, nil
	}
	var res ReloadResult
	if loadErr != nil {
		res, err = ReloadResult{Previous: e.Revision(), Revision: e.Revision()}, e.refuse(ctx, trigger, "", loadErr)
	} else {
		res, err = e.install(ctx, trigger, start, set)
	}
	e.urlMu.Lock()
	defer e.urlMu.Unlock()
	if err != nil {
		e.url.etagRefused = true
		e.url.outcome, e.url.outcomeErr = key, err
		return res, err
	}
	e.url.etagRefused = false
	e.url.inForce = f.sum
	e.url.refreshed, e.url.outcome, e.url.outcomeErr = e.now(), "", nil
	return res, nil
}

// newOutcome records a failure of a bundle URL; it reports whether it is
// to be logged and counted: not when a poll repeats the last one.
func (e *Engine) newOutcome(trigger, key string, err error) bool {
	e.urlMu.Lock()
	defer e.urlMu.Unlock()
	repeat := trigger == "poll" && key == e.url.outcome
	e.url.outcome, e.url.outcomeErr = key, err
	return !repeat
}

// fetchBundle fetches Options.BundleURL within Options.BundleTimeout
// (request, headers and the whole body), sending etag as If-None-Match. A
// 304 Not Modified is a fetched with notModified. A 200 body is read in
// chunks, at most MaxBundleSize bytes (a larger one is kept as refused,
// tooLarge), and hashed, so that a body already in force or already
// refused is not parsed again. Any other status, a network error or the
// timeout is the error: no bundle was received.
func (e *Engine) fetchBundle(ctx context.Context, etag string) (fetched, error) {
	timeout := e.opts.BundleTimeout
	if timeout <= 0 {
		timeout = DefaultBundleTimeout
	}
	fctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	url := e.opts.BundleURL
	req, err := http.NewRequestWithContext(fctx, http.MethodGet, url, nil)
	if err != nil {
		return fetched{}, fmt.Errorf("policy bundle: %w", err)
	}
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	client := e.opts.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	failed := func(err error) error {
		if fctx.Err() != nil && ctx.Err() == nil {
			return fmt.Errorf("policy bundle %s: no complete answer within %s (the bundle fetch timeout): %w", url, timeout, err)
		}
		return fmt.Errorf("policy bundle %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fetched{}, failed(err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotModified:
		return fetched{notModified: true}, nil
	case http.StatusOK:
	default:
		return fetched{}, fmt.Errorf("policy bundle %s: HTTP status %s", url, resp.Status)
	}
	f := fetched{etag: resp.Header.Get("ETag")}
	if resp.ContentLength > MaxBundleSize {
		f.tooLarge = fmt.Errorf("policy bundle %s: larger than %d bytes (Content-Length %d)", url, MaxBundleSize, resp.ContentLength)
		f.sum = "length " + strconv.FormatInt(resp.ContentLength, 10)
		return f, nil
	}
	h := sha256.New()
	body := &capReader{r: resp.Body, n: MaxBundleSize}
	for {
		c := make([]byte, bundleChunk)
		n, err := io.ReadFull(body, c)
		h.Write(c[:n])
		if n > 0 {
			f.chunks = append(f.chunks, c[:n])
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if errors.Is(err, errTooLarge) {
			// Refused; its first MaxBundleSize bytes key the outcome.
			f.chunks = nil
			f.tooLarge = fmt.Errorf("policy bundle %s: larger than %d bytes", url, MaxBundleSize)
			break
		}
		if err != nil {
			return fetched{}, failed(err) // cut short: no bundle was received
		}
	}
	f.sum = hex.EncodeToString(h.Sum(nil))
	return f, nil
}

// bundleChunk is the size of the chunks a bundle body is read in.
const bundleChunk = 256 << 10

// Freshness reports, for a bundle URL source, when the source last
// confirmed the set in force (a 304, the same bundle again, or a new one
// swapped in; a refused bundle or a failed fetch confirms nothing) and
// whether that is longer ago than Options.BundleStaleAfter. For any other
// source it returns the zero time and false.
func (e *Engine) Freshness() (refreshed time.Time, stale bool) {
	if e.opts.BundleURL == "" {
		return time.Time{}, false
	}
	e.urlMu.Lock()
	refreshed = e.url.refreshed
	e.urlMu.Unlock()
	after := e.opts.BundleStaleAfter
	return refreshed, after > 0 && e.now().Sub(refreshed) > after
}

// freshnessGauges registers fleet.policy.stale (1 while Freshness reports
// the policy stale, else 0; every source) and, for a bundle URL,
// fleet.policy.refresh_age (seconds since the source last confirmed the
// set in force).
func (e *Engine) freshnessGauges(meter metric.Meter) error {
	_, err := meter.Int64ObservableGauge("fleet.policy.stale",
		metric.WithDescription("1 while the policy bundle URL has not confirmed the set in force for FLEET_POLICY_BUNDLE_STALE_POLLS poll intervals, else 0."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			v := int64(0)
			if _, stale := e.Freshness(); stale {
				v = 1
			}
			o.Observe(v)
			return nil
		}))
	if err != nil || e.opts.BundleURL == "" {
		return err
	}
	_, err = meter.Float64ObservableGauge("fleet.policy.refresh_age", metric.WithUnit("s"),
		metric.WithDescription("Seconds since the policy bundle URL last confirmed the set in force (a 304, the same bundle, or a new one swapped in)."),
		metric.WithFloat64Callback(func(_ context.Context, o metric.Float64Observer) error {
			at, _ := e.Freshness()
			o.Observe(e.now().Sub(at).Seconds())
			return nil
		}))
	return err
}
