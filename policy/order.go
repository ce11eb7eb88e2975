package policy

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/bundle"
)

// SequenceKey is the key, in the metadata of a bundle's .manifest, of the
// bundle's sequence: a positive integer that orders the bundles of one
// source (docs/policy.md §7, "Rollback"). A manifest without it whose
// revision is a plain positive integer has that revision as its sequence.
// The .manifest is one of the files a bundle's signature covers, so the
// sequence is signed with the policy it orders.
const SequenceKey = "fleetapi_sequence"

// manifestSequence returns the sequence of a bundle's manifest: its
// metadata's SequenceKey, or else its revision when that is a plain
// positive integer (`opa build --revision "$BUILD_NUMBER"`); 0 when it has
// neither. A SequenceKey that is not a positive integer below 2^53 is an
// error.
func manifestSequence(m bundle.Manifest) (int64, error) {
	v, ok := m.Metadata[SequenceKey]
	if !ok {
		if n, err := strconv.ParseInt(m.Revision, 10, 64); err == nil && n > 0 && n < 1<<53 && strings.Trim(m.Revision, "0123456789") == "" {
			return n, nil
		}
		return 0, nil
	}
	var n int64
	var err error
	switch x := v.(type) {
	case json.Number:
		n, err = strconv.ParseInt(string(x), 10, 64)
	case float64:
		if x != math.Trunc(x) {
			err = fmt.Errorf("%v is not an integer", x)
		}
		n = int64(x)
	case int:
		n = int64(x)
	case int64:
		n = x
	default:
		err = fmt.Errorf("%v is not a number", v)
	}
	if err != nil || n < 1 || n >= 1<<53 {
		return 0, fmt.Errorf(".manifest metadata %s %v: want a positive integer (below 2^53)", SequenceKey, v)
	}
	return n, nil
}

// bundleOrder checks that set may replace cur, the set in force (nil at
// start): the rollback protection of issue 19 item 5. It applies to sets
// read from a bundle only.
//
//   - With a verification key (FLEET_POLICY_BUNDLE_KEY) a bundle must carry
//     a sequence: a signed bundle without one could not be told from an
//     older one.
//   - A sequence below Options.MinBundleSequence is refused, at start too.
//   - When the set in force has a sequence, a new one must carry a
//     higher one: a lower or equal sequence (or none) is an older bundle
//     and is refused — unless Options.AllowRollback, when it replaces the
//     set in force with a warning in the log.
func (e *Engine) bundleOrder(cur, set *policySet) error {
	if !set.fromBundle {
		return nil
	}
	if set.sequence == 0 && e.opts.BundleVerification != nil {
		return fmt.Errorf("policy bundle: no sequence (%s in the .manifest metadata, or a revision that is a plain number: opa build --revision N): with a verification key every bundle must carry one, so that an older signed bundle cannot replace a newer one (docs/policy.md §7, Rollback)", SequenceKey)
	}
	if min := e.opts.MinBundleSequence; min > 0 && set.sequence < min {
		return fmt.Errorf("policy bundle: sequence %d is below the minimum %d (FLEET_POLICY_BUNDLE_MIN_SEQUENCE)", set.sequence, min)
	}
	if cur == nil || cur.sequence == 0 || set.sequence > cur.sequence {
		return nil
	}
	if e.opts.AllowRollback {
		e.logger.Warn("policy rollback allowed",
			slog.Int64("sequence", set.sequence), slog.Int64("sequence_in_force", cur.sequence),
			slog.String("policy_revision", set.revision()))
		return nil
	}
	if set.sequence == cur.sequence {
		return fmt.Errorf("policy bundle: rollback refused: sequence %d is the one in force, with another content (a new bundle needs a higher %s; FLEET_POLICY_ALLOW_ROLLBACK allows it)", set.sequence, SequenceKey)
	}
	return fmt.Errorf("policy bundle: rollback refused: sequence %d is older than %d in force (FLEET_POLICY_ALLOW_ROLLBACK allows it)", set.sequence, cur.sequence)
}
