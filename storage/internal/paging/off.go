package paging

import (
	"fmt"
	"strings"
)

// Off names the shapes switched off, for the paired A/B of what each
// still buys (scripts/bench-ab.sh with FLEET_PAGING_OFF on one side): a
// shape switched off is never chosen, and the table's next row applies.
// The zero Off switches nothing off, as in production.
type Off struct {
	// Deferred: no deferred join, and no ids read instead of one (the
	// page is walked).
	Deferred bool
	// KeptIDs: no ids kept with a total; pages are never read by key.
	KeptIDs bool
	// KeptTotals: no total kept (and so no ids either); every total that
	// the page or the row counters do not tell is counted.
	KeptTotals bool
}

// ParseOff reads a comma-separated list of the names of Off's switches:
// "deferred", "kept_ids", "kept_totals" (empty: none).
func ParseOff(s string) (Off, error) {
	var o Off
	for _, name := range strings.Split(s, ",") {
		switch strings.TrimSpace(name) {
		case "":
		case "deferred":
			o.Deferred = true
		case "kept_ids":
			o.KeptIDs = true
		case "kept_totals":
			o.KeptTotals = true
		default:
			return Off{}, fmt.Errorf("paging: %q is not a shape that can be switched off (deferred, kept_ids, kept_totals)", name)
		}
	}
	return o, nil
}
