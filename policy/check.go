package policy

import (
	"context"
	"fmt"
	"io"
)

// Check validates the policy set in dir ("" = the embedded set) as the
// server would at start-up: it loads and compiles it, runs its tests, and
// compiles every scope rule of opts.Schema's resources for a principal of
// every account type, and the management scope (data.fleet.manage.accounts)
// the same way, each checked by opts.Schema (Schema.CheckScope) when set.
// opts.Dir is the directory or bundle file, or opts.BundleURL the bundle
// URL; opts.BundleVerification, when set, must verify the bundle's
// signature, and a bundle is checked for its sequence (bundleOrder) as at
// start-up. It writes a summary to w (the revision, whether the set's
// routes file is current (RoutesFileState), the
// tests, the coverage and the compiled scopes) and returns the first
// problem found.
func Check(ctx context.Context, opts Options, w io.Writer) error {
	dir := opts.Dir
	opts.CacheSize = -1
	e, err := New(ctx, opts)
	if err != nil {
		if opts.BundleURL != "" {
			dir = opts.BundleURL
		}
		return fmt.Errorf("policy check %s: %w", dirName(dir), err)
	}
	fmt.Fprintf(w, "policy %s\nrevision %s\n", e.sourceName(), e.Revision())
	set := e.cur.Load().set
	if st := set.routesFileState(); st == "current" {
		fmt.Fprintf(w, "routes file %s: current\n", RoutesModule)
	} else {
		fmt.Fprintf(w, "routes file %s: %s (fleetapi evaluates its own routes; OPA's tools read the file: fleetapi policy routes --write DIR)\n", RoutesModule, st)
	}
	if set.fromBundle {
		if opts.BundleVerification != nil {
			fmt.Fprintln(w, "signature: verified")
		} else {
			fmt.Fprintln(w, "signature: not checked (no verification key)")
		}
		if set.sequence > 0 {
			fmt.Fprintf(w, "sequence %d\n", set.sequence)
		} else {
			fmt.Fprintf(w, "sequence: none (no %s in the .manifest metadata, and the revision is not a plain number: a replica with a verification key refuses the bundle)\n", SequenceKey)
		}
	}
	rep := e.TestReport()
	fmt.Fprintf(w, "tests: %d passed, %d failed; coverage %.2f%%\n", rep.Passed, rep.Failed, rep.Coverage)
	for _, t := range accountTypes() {
		in := samplePrincipal(t)
		for _, r := range e.resources {
			rs, err := e.Scope(ctx, in, r)
			if err != nil {
				return fmt.Errorf("scope rule %q for %s principal: %w", r, article(t), err)
			}
			fmt.Fprintf(w, "scope %-10s %-10s (account %d, manager %d): %s\n", r, t, in.Account.ID, in.Account.ManagerID, rs)
		}
		ms, err := e.ManagementScope(ctx, in)
		if err != nil {
			return fmt.Errorf("management scope for %s principal: %w", article(t), err)
		}
		fmt.Fprintf(w, "scope %-10s %-10s (account %d, manager %d): %s\n", ManagementResource, t, in.Account.ID, in.Account.ManagerID, ms)
	}
	fmt.Fprintln(w, "ok")
	return nil
}
