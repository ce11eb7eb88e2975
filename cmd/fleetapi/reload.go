package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fleetapi/fleetapi/policy"
)

// policySource turns the policy configuration into the engine's source:
// FLEET_POLICY_DIR, or FLEET_POLICY_BUNDLE (a bundle file or an HTTP(S)
// URL), verified with FLEET_POLICY_BUNDLE_KEY when set.
func (c config) policySource() (policy.Options, error) {
	o := policy.Options{DirSettle: c.PolicySettle}
	if o.DirSettle <= 0 {
		o.DirSettle = -1 // no wait: policy.Options reads 0 as the default
	}
	switch {
	case c.PolicyDir != "" && c.PolicyBundle != "":
		return o, errors.New("FLEET_POLICY_DIR and FLEET_POLICY_BUNDLE are both set: choose one")
	case c.PolicyBundleKey != "" && c.PolicyBundle == "":
		return o, errors.New("FLEET_POLICY_BUNDLE_KEY is set without FLEET_POLICY_BUNDLE: a key verifies bundles only")
	}
	if c.PolicyBundleKey != "" {
		v, err := policy.LoadBundleVerification(c.PolicyBundleKey)
		if err != nil {
			return o, err
		}
		o.BundleVerification = v
	}
	o.AllowRollback = c.PolicyAllowRollback
	o.MinBundleSequence = c.PolicyBundleMinSequence
	switch b := c.PolicyBundle; {
	case strings.HasPrefix(b, "http://") || strings.HasPrefix(b, "https://"):
		o.BundleURL = b
		o.BundleTimeout = c.PolicyBundleTimeout
		o.BundleStaleAfter = time.Duration(c.PolicyBundleStalePolls) * c.PolicyBundlePoll
	case b != "":
		st, err := os.Stat(b)
		if err != nil {
			return o, err
		}
		if st.IsDir() {
			return o, errors.New("FLEET_POLICY_BUNDLE names a directory: use FLEET_POLICY_DIR for a directory, FLEET_POLICY_BUNDLE for a bundle file (opa build output) or URL")
		}
		o.Dir = b
	default:
		o.Dir = c.PolicyDir
	}
	return o, nil
}

// startPolicyReload reloads the engine's policy on SIGHUP and when its
// source changes (engine.Watch: a directory or bundle file every
// FLEET_POLICY_WATCH, a bundle URL every FLEET_POLICY_BUNDLE_POLL), until
// the returned stop is called; stop waits for both to end.
func startPolicyReload(ctx context.Context, engine *policy.Engine, cfg config, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	interval := cfg.PolicyWatch
	if strings.HasPrefix(cfg.PolicyBundle, "http://") || strings.HasPrefix(cfg.PolicyBundle, "https://") {
		interval = cfg.PolicyBundlePoll
	}
	wg.Go(func() { engine.Watch(ctx, interval) })
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				log.Info("SIGHUP: reloading the policy")
				// The outcome (reloaded, unchanged or refused with the
				// reason) is logged by the engine.
				if res, err := engine.Reload(ctx, "SIGHUP"); err == nil && !res.Changed {
					log.Info("policy unchanged", slog.String("policy_revision", res.Revision))
				}
			}
		}
	})
	return func() {
		signal.Stop(hup)
		cancel()
		wg.Wait()
	}
}
