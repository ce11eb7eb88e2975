// Package bench is fleetops' load harness (`fleetops bench`). It runs
// fixed scenarios (lists, searches, one event, due services, passenger
// creation) at a fixed concurrency against a running fleetapi server on
// the loopback interface, and measures the same scenarios' floor: the
// storage calls the API makes, with the scope the real policy engine
// compiles, run directly against PostgreSQL at the same concurrency. It
// prints latency percentiles, throughput, errors and the API/floor ratio
// per scenario, as text and as a markdown table (docs/performance.md).
// The ingest workload (--workload ingest, ingest.go) posts readings from
// gateway clients instead and measures readings/s, the floor of storage's
// batch entry point and the reading → notification latency on a stream.
// The webhooks workload (--workload webhooks, webhooks.go) measures the
// deliveries of notifications to a receiver of its own: latency,
// deliveries/s, dead endpoints beside healthy ones, and a backlog's drain.
//
// The tokens come from `fleetapi generate --tokens FILE`.
package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/cli"
	"github.com/fleetapi/fleetapi/policy"
)

// Bounds that keep a run small enough for a shared machine.
const (
	maxConcurrency = 256
	maxDuration    = 10 * time.Minute
	maxRequests    = 10_000_000
	// maxBatch is the most readings POST /readings takes (docs/design.md §14).
	maxBatch = 1000
)

// config is the harness configuration.
type config struct {
	BaseURL      string
	DatabaseURL  string
	TokensFile   string
	Concurrency  int
	Duration     time.Duration
	Requests     int64
	Warmup       time.Duration
	Scenarios    string
	Pool         int
	AdminSearch  string
	UserSearch   string
	ManagerQuery string
	DueRole      string
	ExplainFile  string
	MarkdownFile string
	ServerPID    int
	NoAPI        bool
	NoFloor      bool
	// Seed and Workload choose the draws of the mixed workload and which
	// workloads run by default (fixed, mixed or both).
	Seed     uint64
	Workload string
	// RLS sets up the row-level-security variant and runs it; OPAURL and
	// OPAPID name the OPA server of the sidecar variant.
	RLS    bool
	OPAURL string
	OPAPID int
	// The ingest workload (--workload ingest): how long each run posts,
	// the readings per batch, the roles of the gateways' token and of the
	// notification stream's, the read scenarios measured idle and while
	// ingesting, how many devices it drives (0: all) and the ingest rate
	// beside the reads (0: half the measured maximum).
	IngestDuration time.Duration
	Batch          int
	GatewayRole    string
	StreamRole     string
	IngestReads    string
	IngestDevices  int
	IngestRate     float64
	// The webhooks workload (--workload webhooks, webhooks.go): the modes,
	// the endpoints of the rate and backlog modes, the notifications/s
	// driven, how long each run drives, the endpoints of the dead mode and
	// how many of them never answer, the deliveries queued by the backlog
	// mode, the devices driven, how long a run waits for its last
	// deliveries and the backlog for its drain.
	WebhookModes        string
	WebhookEndpoints    int
	WebhookRate         float64
	WebhookDuration     time.Duration
	WebhookWide         int
	WebhookDead         int
	WebhookBacklog      int
	WebhookDevices      int
	WebhookSettle       time.Duration
	WebhookDrainTimeout time.Duration
	// WriteOPAPolicy is a directory to export the policy set into for
	// `opa run --server`, instead of measuring.
	WriteOPAPolicy string
}

// usage heads the flags in the -h text.
const usage = `usage: fleetops bench --tokens FILE [flags]

the load harness: scenarios against a running fleetapi server on loopback
(the API) and the same storage calls directly against its PostgreSQL (the
floor), with percentiles, throughput, CPU per request and the API/floor
ratio; write the tokens with fleetapi generate --tokens FILE. --workload
ingest posts readings instead (POST /readings from gateway clients, the
floor, reading → notification on a stream, reads idle and while ingesting);
--workload webhooks measures webhook deliveries to a local receiver (the
server needs FLEET_WEBHOOK_ALLOW_HTTP=true FLEET_WEBHOOK_ALLOW_NETS=127.0.0.0/8)

flags:
`

// parseConfig parses the flags of args over the defaults, with the
// database URL from FLEET_DATABASE_URL when set, and checks the bounds.
func parseConfig(args []string, getenv func(string) string, stdout io.Writer) (config, error) {
	c := config{
		BaseURL:      "http://127.0.0.1:8080",
		DatabaseURL:  getenv("FLEET_DATABASE_URL"),
		Concurrency:  16,
		Duration:     10 * time.Second,
		Warmup:       2 * time.Second,
		Pool:         16,
		Seed:         1,
		Workload:     "both",
		AdminSearch:  "tachograph",
		UserSearch:   "brake",
		ManagerQuery: "page=100",
		DueRole:      "manager",

		IngestDuration: 60 * time.Second,
		Batch:          500,
		GatewayRole:    "manager",
		StreamRole:     "manager",
		IngestReads:    "user_list_mixed,manager_list_mixed,event_by_id_mixed,due_services_mixed",

		WebhookModes:        "rate,dead,backlog",
		WebhookEndpoints:    10,
		WebhookRate:         20,
		WebhookDuration:     30 * time.Second,
		WebhookWide:         100,
		WebhookDead:         10,
		WebhookBacklog:      100_000,
		WebhookDevices:      200,
		WebhookSettle:       60 * time.Second,
		WebhookDrainTimeout: 10 * time.Minute,
	}
	if c.DatabaseURL == "" {
		c.DatabaseURL = "postgres://postgres@127.0.0.1:5432/fleetapi?sslmode=disable"
	}
	fs := flag.NewFlagSet("fleetops bench", flag.ContinueOnError)
	fs.StringVar(&c.BaseURL, "url", c.BaseURL, "base URL of the fleetapi server (loopback only)")
	fs.StringVar(&c.DatabaseURL, "database-url", c.DatabaseURL, "the server's PostgreSQL, for the floor (FLEET_DATABASE_URL)")
	fs.StringVar(&c.TokensFile, "tokens", "", "token file written by `fleetapi generate --tokens` (required)")
	fs.IntVar(&c.Concurrency, "concurrency", c.Concurrency, "concurrent clients per scenario, API and floor alike")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "measured time per scenario and side (0 with --requests: count only)")
	fs.Int64Var(&c.Requests, "requests", 0, "stop each measurement after this many requests (0: duration only)")
	fs.DurationVar(&c.Warmup, "warmup", c.Warmup, "unmeasured run before each measurement")
	fs.StringVar(&c.Scenarios, "scenarios", "", "comma-separated scenarios to run (default: those of --workload, then the RLS and OPA-sidecar variants when asked for)")
	fs.StringVar(&c.Workload, "workload", c.Workload, "default scenarios: fixed (one principal, term and page each), mixed (drawn from many), or both; ingest runs the ingest workload instead")
	fs.DurationVar(&c.IngestDuration, "ingest-duration", c.IngestDuration, "ingest: how long each run (API, floor) posts")
	fs.IntVar(&c.Batch, "batch", c.Batch, "ingest: readings per POST /readings (1 to 1000)")
	fs.StringVar(&c.GatewayRole, "gateway-role", c.GatewayRole, "ingest: the gateways post with every manager's token (manager: each for its customers' devices) or with one token of this role (admin: every device)")
	fs.StringVar(&c.StreamRole, "stream-role", c.StreamRole, "ingest: the role whose notification stream times reading → notification (empty: no stream)")
	fs.StringVar(&c.IngestReads, "ingest-reads", c.IngestReads, "ingest: read scenarios measured idle and while ingesting at --ingest-rate (empty: none)")
	fs.IntVar(&c.IngestDevices, "ingest-devices", 0, "ingest: drive the first N devices (0: every device)")
	fs.Float64Var(&c.IngestRate, "ingest-rate", 0, "ingest: readings/s posted beside the read scenarios (0: half the API's measured rate)")
	fs.StringVar(&c.WebhookModes, "webhook-modes", c.WebhookModes, "webhooks: the modes to run, comma-separated: rate, dead, backlog")
	fs.IntVar(&c.WebhookEndpoints, "webhook-endpoints", c.WebhookEndpoints, "webhooks: endpoints of the rate and backlog modes (every notification goes to each)")
	fs.Float64Var(&c.WebhookRate, "webhook-rate", c.WebhookRate, "webhooks: notifications/s driven (the dead mode drives the same deliveries/s over its endpoints)")
	fs.DurationVar(&c.WebhookDuration, "webhook-duration", c.WebhookDuration, "webhooks: how long each rate and dead run drives")
	fs.IntVar(&c.WebhookWide, "webhook-wide", c.WebhookWide, "webhooks: endpoints of the dead mode")
	fs.IntVar(&c.WebhookDead, "webhook-dead", c.WebhookDead, "webhooks: of those, how many never answer (held until the sender's timeout)")
	fs.IntVar(&c.WebhookBacklog, "webhook-backlog", c.WebhookBacklog, "webhooks: deliveries the backlog mode queues while the receiver is down")
	fs.IntVar(&c.WebhookDevices, "webhook-devices", c.WebhookDevices, "webhooks: devices of the manager driven (round robin)")
	fs.DurationVar(&c.WebhookSettle, "webhook-settle", c.WebhookSettle, "webhooks: how long a run waits after driving for its deliveries")
	fs.DurationVar(&c.WebhookDrainTimeout, "webhook-drain-timeout", c.WebhookDrainTimeout, "webhooks: how long the backlog mode waits for the drain")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the mixed workload's draws (API and floor draw the same sequence)")
	fs.BoolVar(&c.RLS, "rls", false, "set up row-level security in the database (roles and policies, idempotent) and run the RLS variants")
	fs.StringVar(&c.OPAURL, "opa-url", "", "OPA server (opa run --server, loopback) for the OPA-sidecar variants")
	fs.IntVar(&c.OPAPID, "opa-pid", 0, "process id of the OPA server, for its CPU time per request")
	fs.StringVar(&c.WriteOPAPolicy, "write-opa-policy", "", "export the policy set (with the generated routes module) into this directory for opa run --server, and exit")
	fs.IntVar(&c.Pool, "pool", c.Pool, "connection pool of the floor (the server's default is 16)")
	fs.StringVar(&c.AdminSearch, "admin-search", c.AdminSearch, "search term of admin_search")
	fs.StringVar(&c.UserSearch, "user-search", c.UserSearch, "search term of user_search")
	fs.StringVar(&c.ManagerQuery, "manager-query", c.ManagerQuery, "query string of manager_list")
	fs.StringVar(&c.DueRole, "due-role", c.DueRole, "role of due_services: admin, manager, user or subaccount")
	fs.StringVar(&c.ExplainFile, "explain", "", "write EXPLAIN (ANALYZE, BUFFERS) of each scenario's SQL to this markdown file")
	fs.StringVar(&c.MarkdownFile, "markdown", "", "also write the result table to this markdown file")
	fs.IntVar(&c.ServerPID, "server-pid", 0, "process id of the server, to sample its resident memory (Linux)")
	fs.BoolVar(&c.NoAPI, "no-api", false, "measure the floor only")
	fs.BoolVar(&c.NoFloor, "no-floor", false, "measure the API only")
	if err := cli.Parse(fs, args, stdout, usage); err != nil {
		return c, err
	}
	if c.Scenarios == "" {
		c.Scenarios = strings.Join(defaultScenarios(c), ",")
	}
	return c, c.validate()
}

// defaultScenarios are the scenarios of the workload, then the RLS and
// OPA-sidecar variants when asked for.
func defaultScenarios(c config) []string {
	var out []string
	if c.Workload == "ingest" || c.Workload == "webhooks" {
		return nil
	}
	if c.Workload != "mixed" {
		out = append(out, scenarioNames()...)
	}
	if c.Workload != "fixed" {
		out = append(out, mixedNames()...)
	}
	if c.RLS {
		out = append(out, rlsNames()...)
	}
	if c.OPAURL != "" {
		out = append(out, sidecarNames()...)
	}
	return out
}

// validate checks the bounds of every measurement and that both the
// server and the database are on loopback; each failure is a usage error.
func (c config) validate() error {
	if c.WriteOPAPolicy != "" {
		return nil
	}
	switch {
	case c.Workload != "fixed" && c.Workload != "mixed" && c.Workload != "both" && c.Workload != "ingest" && c.Workload != "webhooks":
		return cli.Usagef("--workload must be fixed, mixed, both, ingest or webhooks")
	case c.Batch < 1 || c.Batch > maxBatch:
		return cli.Usagef("--batch must be 1 to %d", maxBatch)
	case c.IngestDuration <= 0 || c.IngestDuration > maxDuration:
		return cli.Usagef("--ingest-duration must be above 0 and at most %s", maxDuration)
	case c.IngestDevices < 0 || c.IngestRate < 0:
		return cli.Usagef("--ingest-devices and --ingest-rate must not be negative")
	case c.Workload == "webhooks" && !validModes(c.WebhookModes):
		return cli.Usagef("--webhook-modes must list rate, dead or backlog")
	case c.WebhookEndpoints < 1 || c.WebhookEndpoints > 1000 || c.WebhookWide < 1 || c.WebhookWide > 1000:
		return cli.Usagef("--webhook-endpoints and --webhook-wide must be 1 to 1000")
	case c.WebhookDead < 0 || c.WebhookDead >= c.WebhookWide:
		return cli.Usagef("--webhook-dead must be 0 to fewer than --webhook-wide")
	case c.WebhookRate <= 0 || c.WebhookRate > 10_000:
		return cli.Usagef("--webhook-rate must be above 0 and at most 10000 notifications/s")
	case c.WebhookBacklog < 1 || c.WebhookBacklog > maxRequests:
		return cli.Usagef("--webhook-backlog must be 1 to %d", maxRequests)
	case c.WebhookDevices < 1 || c.WebhookDevices > 100_000:
		return cli.Usagef("--webhook-devices must be 1 to 100000")
	case c.WebhookDuration <= 0 || c.WebhookDuration > maxDuration || c.WebhookSettle < 0 || c.WebhookSettle > maxDuration ||
		c.WebhookDrainTimeout <= 0 || c.WebhookDrainTimeout > time.Hour:
		return cli.Usagef("--webhook-duration and --webhook-settle must be at most %s, --webhook-drain-timeout at most 1h", maxDuration)
	case c.OPAPID < 0:
		return cli.Usagef("--opa-pid must be a process id (0: none)")
	case c.TokensFile == "":
		return cli.Usagef("--tokens is required (write it with `fleetapi generate --tokens FILE`)")
	case c.Concurrency < 1 || c.Concurrency > maxConcurrency:
		return cli.Usagef("--concurrency must be 1 to %d", maxConcurrency)
	case c.Duration < 0 || c.Duration > maxDuration || c.Warmup < 0 || c.Warmup > maxDuration:
		return cli.Usagef("--duration and --warmup must be 0 to %s", maxDuration)
	case c.Requests < 0 || c.Requests > maxRequests:
		return cli.Usagef("--requests must be 0 to %d", maxRequests)
	case c.Duration == 0 && c.Requests == 0:
		return cli.Usagef("give --duration or --requests: every measurement must be bounded")
	case c.Pool < 1 || c.Pool > maxConcurrency:
		return cli.Usagef("--pool must be 1 to %d", maxConcurrency)
	case c.NoAPI && c.NoFloor:
		return cli.Usagef("--no-api and --no-floor leave nothing to measure")
	case c.ServerPID < 0:
		return cli.Usagef("--server-pid must be a process id (0: none)")
	}
	if err := cli.CheckHTTP("--url", c.BaseURL); err != nil {
		return err
	}
	if c.OPAURL != "" {
		if err := cli.CheckHTTP("--opa-url", c.OPAURL); err != nil {
			return err
		}
	}
	return cli.CheckPostgres("--database-url", c.DatabaseURL)
}

// Run parses args (the flags after "bench"), with getenv for the
// environment, runs every selected scenario and prints the report to
// stdout.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg, err := parseConfig(args, getenv, stdout)
	if err != nil {
		return err
	}
	if cfg.WriteOPAPolicy != "" {
		files, err := policy.ExportModules("", cfg.WriteOPAPolicy)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %d modules to %s: opa run --server %s\n", len(files), cfg.WriteOPAPolicy, cfg.WriteOPAPolicy)
		return nil
	}
	h, err := newHarness(ctx, cfg, stdout)
	if err != nil {
		return err
	}
	defer h.close()
	switch cfg.Workload {
	case "ingest":
		return h.ingestWorkload(ctx)
	case "webhooks":
		return h.webhooksWorkload(ctx)
	}
	return h.run(ctx)
}

// validModes reports whether s lists only webhooks modes, at least one.
func validModes(s string) bool {
	n := 0
	for _, m := range strings.Split(s, ",") {
		switch strings.TrimSpace(m) {
		case "rate", "dead", "backlog":
			n++
		case "":
		default:
			return false
		}
	}
	return n > 0
}
