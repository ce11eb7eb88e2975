package policy

import (
	"context"
	"fmt"
	"os"
	"time"
)

// DefaultDirSettle is how long a policy directory or bundle file must hold
// still before the engine loads it, when Options.DirSettle is 0.
const DefaultDirSettle = time.Second

// settleRounds bounds the waits for a source to hold still: after this
// many rounds in which it changed, the load fails (the set in force keeps
// serving; at start-up the start fails).
const settleRounds = 30

// loadPolicyDir reads the policy directory dir as a set from a checksum
// read twice: the files are read until two reads in a row agree (names and
// contents), so a file replaced during the read does not yield a mixture.
// It is the one-shot commands' read (policy test, --mutate, export); the
// engine (serve, check, explain, diff) adds a settle time (loadStable).
func loadPolicyDir(dir string) (*policySet, error) {
	fsys := os.DirFS(dir)
	prev, err := readPolicyFiles(fsys)
	if err != nil {
		return nil, fmt.Errorf("load policy: %w", err)
	}
	for range settleRounds {
		cur, err := readPolicyFiles(fsys)
		if err != nil {
			return nil, fmt.Errorf("load policy: %w", err)
		}
		if filesHash(cur) == filesHash(prev) {
			return parsePolicyFiles(cur, dir)
		}
		prev = cur
	}
	return nil, fmt.Errorf("load policy %s: the files changed between every two reads (%d reads): still being written?", dir, settleRounds+1)
}

// settle is the engine's Options.DirSettle: DefaultDirSettle for 0, none
// for a negative value.
func (e *Engine) settle() time.Duration {
	switch d := e.opts.DirSettle; {
	case d == 0:
		return DefaultDirSettle
	case d < 0:
		return 0
	default:
		return d
	}
}

// loadStable loads the engine's directory or bundle file (Options.Dir) by
// the one rule every trigger follows (start-up, SIGHUP, the watcher, and
// the commands built on New): a set is loaded only from a source that held
// still. The source's fingerprint (sourceFingerprint: names and contents)
// must be the same at two reads DirSettle apart, the set is then read, and
// the fingerprint read once more must still be the same; otherwise it
// waits again, up to settleRounds times, and then fails ("still being
// written"). A deployment that copies files one by one, with pauses
// shorter than DirSettle, is therefore never loaded half-way, whichever
// trigger fires during the copy. It returns the set and the fingerprint of
// what it read ("" when the source did not hold still or could not be
// read: the watcher then tries again at its next change or poll).
func (e *Engine) loadStable(ctx context.Context) (*policySet, string, error) {
	src, settle := e.opts.Dir, e.settle()
	prev, err := sourceFingerprint(src)
	if err != nil {
		return nil, "", fmt.Errorf("policy source: %w", err)
	}
	for range settleRounds {
		if err := sleepCtx(ctx, settle); err != nil {
			return nil, "", err
		}
		cur, err := sourceFingerprint(src)
		if err != nil {
			return nil, "", fmt.Errorf("policy source: %w", err)
		}
		if cur != prev {
			prev = cur
			continue
		}
		set, err := loadPolicySource(src, e.opts.BundleVerification)
		after, ferr := sourceFingerprint(src)
		if ferr != nil {
			return nil, "", fmt.Errorf("policy source: %w", ferr)
		}
		if after != cur {
			prev = after // changed while it was read: wait again
			continue
		}
		return set, cur, err
	}
	return nil, "", fmt.Errorf("policy source %s did not hold still for %s in %d tries: still being written?", src, settle, settleRounds)
}

// sleepCtx waits d, or until ctx ends (its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
