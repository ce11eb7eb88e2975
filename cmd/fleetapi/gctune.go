package main

import "runtime/debug"

// Garbage-collector settings of the server (`fleetapi serve` and `dev`)
// when the environment sets neither GOGC nor GOMEMLIMIT
// (docs/performance.md, "The fixed cost of a request"). The server's live
// heap is small (tens of MB) and almost everything a request allocates
// dies with it, so Go's default (collect when the heap has doubled) runs a
// collection every few hundred requests: about a tenth of the server's
// CPU time at load. Letting the heap grow to 5× the live heap cuts that
// share; the soft memory limit makes the collector work harder again
// before the process nears it, so memory stays bounded at any load.
const (
	serveGCPercent   = 400
	serveMemoryLimit = 160 << 20
)

// gcSettings returns the collector settings for the command line args:
// the server's, unless GOGC or GOMEMLIMIT is set (Go's runtime has then
// applied them) or the command is not a server (ok false).
func gcSettings(args []string, getenv func(string) string) (percent int, limit int64, ok bool) {
	if len(args) == 0 || (args[0] != "serve" && args[0] != "dev") || getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return 0, 0, false
	}
	return serveGCPercent, serveMemoryLimit, true
}

// tuneGC applies gcSettings to this process. Only main calls it: the
// settings are the process's, not one command's.
func tuneGC(args []string, getenv func(string) string) {
	if percent, limit, ok := gcSettings(args, getenv); ok {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
}
