package main

import (
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/api/metering"
	"github.com/fleetapi/fleetapi/clock"
	"github.com/fleetapi/fleetapi/delivery"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/limits"
	"github.com/fleetapi/fleetapi/telemetry"
	"github.com/fleetapi/fleetapi/tenancy"
	"github.com/fleetapi/fleetapi/webhook"
)

// config is the configuration of the server commands (docs/design.md §7).
type config struct {
	DatabaseURL string
	Addr        string
	PolicyDir   string
	// PolicyBundle is an OPA bundle file or HTTP(S) URL; PolicyBundleKey
	// the PEM public key its signature must verify against.
	PolicyBundle    string
	PolicyBundleKey string
	// PolicyWatch is the polling interval of a policy directory or bundle
	// file (0: not watched); PolicyBundlePoll that of a bundle URL.
	PolicyWatch      time.Duration
	PolicyBundlePoll time.Duration
	// PolicySettle is how long a policy directory or bundle file must hold
	// still before a set is loaded from it (0: two reads in a row agree).
	PolicySettle time.Duration
	// PolicyBundleTimeout bounds one fetch of a bundle URL;
	// PolicyBundleStalePolls is the number of poll intervals without
	// confirmation after which the policy is reported stale (0: never).
	PolicyBundleTimeout    time.Duration
	PolicyBundleStalePolls int
	// PolicyAllowRollback lets an older bundle replace a newer one;
	// PolicyBundleMinSequence is the lowest bundle sequence accepted.
	PolicyAllowRollback     bool
	PolicyBundleMinSequence int64
	DecisionLog             string
	RedisURL                string
	MetricsAddr             string
	// RateLimit is a token's default budget per minute; AuthFailureLimit a
	// client address's budget of failed authentications per minute.
	RateLimit        int
	AuthFailureLimit int
	// Quotas are the platform default quotas of every account (docs/design.md §12;
	// a nil limit is unlimited).
	Quotas limits.Quotas
	// TrustedProxies are the load balancers whose X-Forwarded-For names
	// the client.
	TrustedProxies []netip.Prefix
	// DBMaxConns is the size of the database pool of one replica (and of
	// its pool to each read replica).
	DBMaxConns int
	// ReadURLs are the streaming replicas that take the reads of the
	// client API (docs/design.md §11); ReplicaMaxLag the staleness beyond which one
	// is skipped; ReplicaCheckInterval the time between health checks.
	ReadURLs             []string
	ReplicaMaxLag        time.Duration
	ReplicaCheckInterval time.Duration
	// RequestTimeout bounds the work of one request (then 503).
	RequestTimeout time.Duration
	// TenantMaxInFlight bounds one tenant's requests in flight on a
	// replica, and so the connections of its pool it holds (0: no
	// bound); TenantQueueTimeout is how long a request over the bound
	// waits for a slot before its 429.
	TenantMaxInFlight  int
	TenantQueueTimeout time.Duration
	// UsageFlushInterval is how often a replica adds its usage counts to
	// the database (docs/design.md §12); UsageMaxEntries bounds the (account, day,
	// route) keys it counts in memory between two flushes.
	UsageFlushInterval time.Duration
	UsageMaxEntries    int
	// CounterFoldInterval is how often the row counters' stripes are
	// folded into one row per account (storage.FoldCounters); 0 never.
	CounterFoldInterval time.Duration
	// PurgeInterval is how often expired idempotency keys and dead tokens
	// are purged (storage.Store.Purge); 0 never. TokenRetention is how long
	// a revoked or expired token is kept (0: forever).
	PurgeInterval  time.Duration
	TokenRetention time.Duration
	// ClockInterval is how often the holder of the clock's lease sweeps
	// the clock's rules (connection_no, services due by the day: package
	// clock); 0 never (this replica never takes the lease).
	ClockInterval time.Duration
	// WebhookWorkers is how many deliveries this replica sends at once
	// (package delivery; FLEET_WEBHOOK_WORKERS; 0: none, the other
	// replicas send), each holding a
	// connection of the sender's own pool while it sends.
	// WebhookEndpointInflight is the most attempts in flight to one
	// endpoint across the replicas (FLEET_WEBHOOK_ENDPOINT_INFLIGHT);
	// WebhookRetries the waits after each failed attempt
	// (FLEET_WEBHOOK_RETRIES); WebhookDisableAfter how long an endpoint
	// fails every attempt before it is disabled
	// (FLEET_WEBHOOK_DISABLE_AFTER); WebhookTimeout bounds one attempt
	// (FLEET_WEBHOOK_TIMEOUT).
	WebhookWorkers          int
	WebhookEndpointInflight int
	WebhookRetries          []time.Duration
	WebhookDisableAfter     time.Duration
	WebhookTimeout          time.Duration
	// PositionsRetention is how long positions and notifications are kept
	// (docs/design.md §14): readings older than it are refused
	// (READING_TOO_OLD) and the maintenance drops older partitions.
	PositionsRetention time.Duration
	// LogFlushInterval is how long the server's log lines may wait in
	// memory before they are written to stdout; 0 writes each at once.
	LogFlushInterval time.Duration
	// DrainDelay is how long /readyz answers 503 before the listener
	// closes on shutdown; ShutdownTimeout how long in-flight requests may
	// then take.
	DrainDelay      time.Duration
	ShutdownTimeout time.Duration
	// ReadHeaderTimeout bounds how long a client may take to send its
	// request headers (slow clients cannot hold connections).
	ReadHeaderTimeout time.Duration
	NoMigrate         bool
	// AllowDemoTokens lets serve start while demo tokens work in its
	// database (dev sets it; serve has --allow-demo-tokens).
	AllowDemoTokens bool
	// ListenURL is where the authentication cache's listener connects
	// (LISTEN needs the primary itself, not a transaction pooler); the
	// database URL when empty.
	ListenURL string
	// AuthCacheSize bounds the authentication cache (principals); 0 turns
	// it off.
	AuthCacheSize int
	// StreamHeartbeat is the time between two heartbeat comments of a
	// notification stream; StreamsPerAccount the most open streams of one
	// account across the replicas.
	StreamHeartbeat   time.Duration
	StreamsPerAccount int
	// WebhookKeys seals the webhooks' secrets (FLEET_WEBHOOK_KEY: base64
	// keys of 32 bytes, comma-separated, the sealing key first); nil when
	// unset: serve then answers webhook creates and rotations 503, dev
	// makes a key for its run. Never printed.
	WebhookKeys *webhook.KeyRing
	// WebhookURLs are the rules of a webhook's url: plain http only with
	// FLEET_WEBHOOK_ALLOW_HTTP=true, the networks of
	// FLEET_WEBHOOK_ALLOW_NETS (CIDRs) let through.
	WebhookURLs webhook.Config
}

// defaultConfig reads the FLEET_* variables, with docs/design.md §7's defaults.
func defaultConfig(getenv func(string) string) (config, error) {
	c := config{
		DatabaseURL:     getenv("FLEET_DATABASE_URL"),
		ListenURL:       getenv("FLEET_DATABASE_LISTEN_URL"),
		Addr:            orDefault(getenv("FLEET_ADDR"), "127.0.0.1:8080"),
		PolicyDir:       getenv("FLEET_POLICY_DIR"),
		PolicyBundle:    getenv("FLEET_POLICY_BUNDLE"),
		PolicyBundleKey: getenv("FLEET_POLICY_BUNDLE_KEY"),
		DecisionLog:     orDefault(getenv("FLEET_DECISION_LOG"), "off"),
		RedisURL:        getenv("FLEET_REDIS_URL"),
		MetricsAddr:     getenv("FLEET_METRICS_ADDR"),
	}
	var errs []error
	c.RateLimit = envInt(getenv, "FLEET_RATE_LIMIT", api.DefaultRateLimit, &errs)
	c.AuthFailureLimit = envInt(getenv, "FLEET_AUTH_FAILURE_LIMIT", api.DefaultAuthFailureLimit, &errs)
	c.DBMaxConns = envInt(getenv, "FLEET_DB_MAX_CONNS", 16, &errs)
	for _, q := range limits.AllQuotas {
		c.Quotas.Set(q, envQuota(getenv, quotaEnv(q), defaultQuotas.Get(q), &errs))
	}
	c.AuthCacheSize = envCount(getenv, "FLEET_AUTH_CACHE_SIZE", tenancy.DefaultCacheSize, &errs)
	c.RequestTimeout = envDuration(getenv, "FLEET_REQUEST_TIMEOUT", 10*time.Second, &errs)
	c.StreamHeartbeat = envDuration(getenv, "FLEET_STREAM_HEARTBEAT", api.DefaultStreamHeartbeat, &errs)
	c.StreamsPerAccount = envInt(getenv, "FLEET_STREAMS_PER_ACCOUNT", api.DefaultStreamsPerAccount, &errs)
	if c.StreamHeartbeat == 0 || c.StreamsPerAccount < 1 {
		errs = append(errs, errors.New("FLEET_STREAM_HEARTBEAT and FLEET_STREAMS_PER_ACCOUNT must be above zero"))
	}
	c.TenantMaxInFlight = envCount(getenv, "FLEET_TENANT_MAX_IN_FLIGHT", DefaultTenantMaxInFlight, &errs)
	c.TenantQueueTimeout = envDuration(getenv, "FLEET_TENANT_QUEUE_TIMEOUT", api.DefaultTenantQueueTimeout, &errs)
	c.UsageFlushInterval = envDuration(getenv, "FLEET_USAGE_FLUSH_INTERVAL", metering.DefaultInterval, &errs)
	c.UsageMaxEntries = envCount(getenv, "FLEET_USAGE_MAX_ENTRIES", metering.DefaultMaxEntries, &errs)
	if c.UsageFlushInterval == 0 || c.UsageMaxEntries == 0 {
		errs = append(errs, errors.New("FLEET_USAGE_FLUSH_INTERVAL and FLEET_USAGE_MAX_ENTRIES must be above zero"))
	}
	c.CounterFoldInterval = envDuration(getenv, "FLEET_COUNTER_FOLD_INTERVAL", storage.DefaultCounterFoldInterval, &errs)
	c.PurgeInterval = envDuration(getenv, "FLEET_PURGE_INTERVAL", storage.DefaultPurgeInterval, &errs)
	c.TokenRetention = envDuration(getenv, "FLEET_TOKEN_RETENTION", storage.DefaultTokenRetention, &errs)
	c.ClockInterval = envDuration(getenv, "FLEET_CLOCK_INTERVAL", clock.DefaultInterval, &errs)
	c.WebhookWorkers = envCount(getenv, "FLEET_WEBHOOK_WORKERS", delivery.DefaultWorkers, &errs)
	c.WebhookEndpointInflight = envCount(getenv, "FLEET_WEBHOOK_ENDPOINT_INFLIGHT", delivery.DefaultEndpointInflight, &errs)
	if c.WebhookEndpointInflight < 1 {
		errs = append(errs, errors.New("FLEET_WEBHOOK_ENDPOINT_INFLIGHT must be above zero"))
	}
	if sched, err := webhook.ParseSchedule(getenv("FLEET_WEBHOOK_RETRIES")); err != nil {
		errs = append(errs, err)
	} else {
		c.WebhookRetries = sched
	}
	c.WebhookDisableAfter = envDuration(getenv, "FLEET_WEBHOOK_DISABLE_AFTER", delivery.DefaultDisableAfter, &errs)
	c.WebhookTimeout = envDuration(getenv, "FLEET_WEBHOOK_TIMEOUT", webhook.DefaultTimeout, &errs)
	if c.WebhookDisableAfter <= 0 || c.WebhookTimeout <= 0 || c.WebhookTimeout > webhook.DefaultTimeout {
		errs = append(errs, errors.New("FLEET_WEBHOOK_DISABLE_AFTER must be above zero and FLEET_WEBHOOK_TIMEOUT between 0 and 15s"))
	}
	c.PositionsRetention = envDuration(getenv, "FLEET_POSITIONS_RETENTION", storage.DefaultPositionsRetention, &errs)
	if c.PositionsRetention < 24*time.Hour {
		errs = append(errs, errors.New("FLEET_POSITIONS_RETENTION must be at least 24h: positions are kept by day"))
	}
	c.LogFlushInterval = envDuration(getenv, "FLEET_LOG_FLUSH_INTERVAL", telemetry.DefaultLogFlushInterval, &errs)
	c.DrainDelay = envDuration(getenv, "FLEET_DRAIN_DELAY", 0, &errs)
	c.ShutdownTimeout = envDuration(getenv, "FLEET_SHUTDOWN_TIMEOUT", 15*time.Second, &errs)
	c.ReadHeaderTimeout = envDuration(getenv, "FLEET_READ_HEADER_TIMEOUT", 5*time.Second, &errs)
	c.ReplicaMaxLag = envDuration(getenv, "FLEET_REPLICA_MAX_LAG", storage.DefaultReplicaMaxLag, &errs)
	c.ReplicaCheckInterval = envDuration(getenv, "FLEET_REPLICA_CHECK_INTERVAL", storage.DefaultReplicaCheckInterval, &errs)
	if c.ReplicaMaxLag == 0 || c.ReplicaCheckInterval == 0 {
		errs = append(errs, errors.New("FLEET_REPLICA_MAX_LAG and FLEET_REPLICA_CHECK_INTERVAL must be above zero"))
	}
	if v := getenv("FLEET_DATABASE_READ_URLS"); v != "" {
		for _, item := range strings.Split(v, ",") {
			item = strings.TrimSpace(item)
			if u, err := url.Parse(item); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
				errs = append(errs, fmt.Errorf("FLEET_DATABASE_READ_URLS: an item is not a postgres:// URL"))
				continue
			}
			c.ReadURLs = append(c.ReadURLs, item)
		}
	}
	c.PolicyWatch = envDuration(getenv, "FLEET_POLICY_WATCH", 2*time.Second, &errs)
	c.PolicyBundlePoll = envDuration(getenv, "FLEET_POLICY_BUNDLE_POLL", 60*time.Second, &errs)
	c.PolicySettle = envDuration(getenv, "FLEET_POLICY_SETTLE", policy.DefaultDirSettle, &errs)
	c.PolicyBundleTimeout = envDuration(getenv, "FLEET_POLICY_BUNDLE_TIMEOUT", policy.DefaultBundleTimeout, &errs)
	if c.PolicyBundleTimeout == 0 {
		errs = append(errs, errors.New("FLEET_POLICY_BUNDLE_TIMEOUT must be above zero: a bundle fetch always has a deadline"))
	}
	c.PolicyBundleStalePolls = envCount(getenv, "FLEET_POLICY_BUNDLE_STALE_POLLS", 3, &errs)
	c.PolicyBundleMinSequence = int64(envCount(getenv, "FLEET_POLICY_BUNDLE_MIN_SEQUENCE", 0, &errs))
	switch v := getenv("FLEET_POLICY_ALLOW_ROLLBACK"); v {
	case "", "false", "0":
	case "true", "1":
		c.PolicyAllowRollback = true
	default:
		errs = append(errs, fmt.Errorf("FLEET_POLICY_ALLOW_ROLLBACK=%q: want true or false", v))
	}
	if v := getenv("FLEET_TRUSTED_PROXIES"); v != "" {
		for _, item := range strings.Split(v, ",") {
			item = strings.TrimSpace(item)
			if !strings.Contains(item, "/") {
				if a, err := netip.ParseAddr(item); err == nil {
					item = netip.PrefixFrom(a, a.BitLen()).String()
				}
			}
			p, err := netip.ParsePrefix(item)
			if err != nil {
				errs = append(errs, fmt.Errorf("FLEET_TRUSTED_PROXIES: %q is not an address or CIDR", item))
				continue
			}
			c.TrustedProxies = append(c.TrustedProxies, p.Masked())
		}
	}
	if v := getenv("FLEET_WEBHOOK_KEY"); v != "" {
		k, err := webhook.ParseKeyRing(v)
		if err != nil {
			errs = append(errs, err) // names the key by position, never its bytes
		}
		c.WebhookKeys = k
	}
	switch v := getenv("FLEET_WEBHOOK_ALLOW_HTTP"); v {
	case "", "false", "0":
	case "true", "1":
		c.WebhookURLs.AllowHTTP = true
	default:
		errs = append(errs, fmt.Errorf("FLEET_WEBHOOK_ALLOW_HTTP=%q: want true or false", v))
	}
	if v := getenv("FLEET_WEBHOOK_ALLOW_NETS"); v != "" {
		nets, err := webhook.ParseAllowNets(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("FLEET_WEBHOOK_ALLOW_NETS: %w", err))
		}
		c.WebhookURLs.AllowNets = nets
	}
	return c, errors.Join(errs...)
}

// envInt reads a positive integer variable, or def when it is unset.
func envInt(getenv func(string) string, name string, def int, errs *[]error) int {
	return envValue(getenv, name, def, "a positive integer", func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		return n, err == nil && n >= 1
	}, errs)
}

// DefaultTenantMaxInFlight is FLEET_TENANT_MAX_IN_FLIGHT's default: a
// quarter of the default pool (FLEET_DB_MAX_CONNS 16), so that three
// tenants at their bound still leave connections for every other.
const DefaultTenantMaxInFlight = 4

// checkTenantBound refuses a bound of requests in flight per tenant that
// is not below the pool: a tenant at its bound would hold every
// connection.
func (c config) checkTenantBound() error {
	if c.TenantMaxInFlight > 0 && c.TenantMaxInFlight >= c.DBMaxConns {
		return fmt.Errorf("FLEET_TENANT_MAX_IN_FLIGHT (%d) must be below FLEET_DB_MAX_CONNS (%d): a tenant at its bound would hold every connection of the pool; 0 turns the bound off",
			c.TenantMaxInFlight, c.DBMaxConns)
	}
	return nil
}

// defaultQuotas are the platform default quotas when FLEET_QUOTA_* are
// unset (docs/design.md §12, docs/management.md "Quotas").
var defaultQuotas = limits.Quotas{
	Subaccounts: ptrInt(1000), Tokens: ptrInt(1000), Devices: ptrInt(100_000), Passengers: ptrInt(1_000_000), Webhooks: ptrInt(100),
	Zones:  ptrInt(10_000),
	Events: ptrInt(10_000),
}

func ptrInt(n int64) *int64 { return &n }

// quotaEnv is the variable of the platform default of quota q
// (FLEET_QUOTA_SUBACCOUNTS, ...).
func quotaEnv(q limits.Quota) string { return "FLEET_QUOTA_" + strings.ToUpper(string(q)) }

// parseQuota reads a quota: a number of rows (0 or more), or "unlimited"
// (nil).
func parseQuota(v string) (*int64, error) {
	if v == "unlimited" {
		return nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%q: want 0 or a positive integer, or unlimited", v)
	}
	return &n, nil
}

// envQuota reads a quota variable (parseQuota), or def when it is unset.
func envQuota(getenv func(string) string, name string, def *int64, errs *[]error) *int64 {
	v := getenv(name)
	if v == "" {
		return def
	}
	q, err := parseQuota(v)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("%s=%w", name, err))
		return def
	}
	return q
}

// envCount reads a non-negative integer variable, or def when it is unset.
func envCount(getenv func(string) string, name string, def int, errs *[]error) int {
	return envValue(getenv, name, def, "0 or a positive integer", func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		return n, err == nil && n >= 0
	}, errs)
}

// envDuration reads a non-negative duration variable, or def when unset.
func envDuration(getenv func(string) string, name string, def time.Duration, errs *[]error) time.Duration {
	return envValue(getenv, name, def, "a duration such as 5s", func(v string) (time.Duration, bool) {
		d, err := time.ParseDuration(v)
		return d, err == nil && d >= 0
	}, errs)
}

// envValue reads the variable name with parse, or def when it is unset. A
// value parse refuses appends an error saying what is wanted (want) to
// errs and gives def.
func envValue[T any](getenv func(string) string, name string, def T, want string, parse func(string) (T, bool), errs *[]error) T {
	v := getenv(name)
	if v == "" {
		return def
	}
	x, ok := parse(v)
	if !ok {
		*errs = append(*errs, fmt.Errorf("%s=%q: want %s", name, v, want))
		return def
	}
	return x
}

// databaseURL is the configured database, or docs/design.md §7's default.
func (c config) databaseURL() string { return orDefault(c.DatabaseURL, storage.DefaultURL) }

// listenURL is where the authentication cache's listener connects: the
// configured listen URL, or the database's.
func (c config) listenURL() string { return orDefault(c.ListenURL, c.databaseURL()) }

// flags registers the server flags on fs, defaulting to c's values.
func (c *config) flags(fs *flag.FlagSet) {
	c.databaseFlag(fs)
	fs.Var(databaseURLValue{&c.ListenURL}, "database-listen-url", "PostgreSQL URL of the primary itself for the authentication cache's LISTEN connection, when the database URL goes through a transaction pooler (FLEET_DATABASE_LISTEN_URL; else the database URL)")
	fs.StringVar(&c.Addr, "addr", c.Addr, "listen address (FLEET_ADDR)")
	fs.StringVar(&c.PolicyDir, "policy-dir", c.PolicyDir, "load the Rego policy set from this directory instead of the embedded one (FLEET_POLICY_DIR)")
	fs.StringVar(&c.PolicyBundle, "policy-bundle", c.PolicyBundle, "load the policy from this OPA bundle file or HTTP(S) URL (FLEET_POLICY_BUNDLE)")
	fs.StringVar(&c.PolicyBundleKey, "policy-bundle-key", c.PolicyBundleKey, "PEM public key that policy bundles must be signed with (FLEET_POLICY_BUNDLE_KEY)")
	fs.DurationVar(&c.PolicyWatch, "policy-watch", c.PolicyWatch, "poll the policy directory or bundle file for changes this often; 0: off (FLEET_POLICY_WATCH)")
	fs.DurationVar(&c.PolicySettle, "policy-settle", c.PolicySettle, "a policy directory or bundle file must hold still this long before it is loaded, at start and on every reload; 0: two reads in a row must agree (FLEET_POLICY_SETTLE)")
	fs.DurationVar(&c.PolicyBundlePoll, "policy-bundle-poll", c.PolicyBundlePoll, "poll a policy bundle URL this often (FLEET_POLICY_BUNDLE_POLL)")
	fs.DurationVar(&c.PolicyBundleTimeout, "policy-bundle-timeout", c.PolicyBundleTimeout, "deadline of one fetch of a policy bundle URL, at start and on every poll (FLEET_POLICY_BUNDLE_TIMEOUT)")
	fs.IntVar(&c.PolicyBundleStalePolls, "policy-bundle-stale-polls", c.PolicyBundleStalePolls, "report the policy stale (/readyz, fleet_policy_stale) after this many poll intervals without the bundle URL confirming it; 0: never (FLEET_POLICY_BUNDLE_STALE_POLLS)")
	fs.BoolVar(&c.PolicyAllowRollback, "policy-allow-rollback", c.PolicyAllowRollback, "let a bundle with a lower sequence replace the one in force (FLEET_POLICY_ALLOW_ROLLBACK; for a deliberate rollback only)")
	fs.Int64Var(&c.PolicyBundleMinSequence, "policy-bundle-min-sequence", c.PolicyBundleMinSequence, "refuse a bundle whose sequence is below this, at start too (FLEET_POLICY_BUNDLE_MIN_SEQUENCE)")
	fs.StringVar(&c.DecisionLog, "decision-log", c.DecisionLog, "decision log: stdout, a file path, or off (FLEET_DECISION_LOG)")
	fs.IntVar(&c.RateLimit, "rate-limit", c.RateLimit, "default per-token requests per minute (FLEET_RATE_LIMIT)")
	for _, q := range limits.AllQuotas {
		fs.Func("quota-"+string(q), "platform default quota of "+string(q)+" per account: a number, or unlimited ("+quotaEnv(q)+"; default "+
			quotaString(defaultQuotas.Get(q))+")", func(v string) error {
			n, err := parseQuota(v)
			if err == nil {
				c.Quotas.Set(q, n)
			}
			return err
		})
	}
	fs.StringVar(&c.RedisURL, "redis-url", c.RedisURL, "Redis URL for rate limits shared by every replica (FLEET_REDIS_URL)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", c.MetricsAddr, "serve /metrics, /healthz and /readyz on this address instead of the API's (FLEET_METRICS_ADDR)")
	fs.IntVar(&c.AuthFailureLimit, "auth-failure-limit", c.AuthFailureLimit, "failed authentications per minute per client address (FLEET_AUTH_FAILURE_LIMIT)")
	fs.IntVar(&c.AuthCacheSize, "auth-cache-size", c.AuthCacheSize, "authenticated principals kept in memory, invalidated through LISTEN/NOTIFY; 0 turns the cache off (FLEET_AUTH_CACHE_SIZE)")
	fs.IntVar(&c.DBMaxConns, "db-max-conns", c.DBMaxConns, "database connections per replica (FLEET_DB_MAX_CONNS)")
	fs.DurationVar(&c.StreamHeartbeat, "stream-heartbeat", c.StreamHeartbeat, "time between two heartbeat comments of a notification stream (FLEET_STREAM_HEARTBEAT)")
	fs.IntVar(&c.StreamsPerAccount, "streams-per-account", c.StreamsPerAccount, "most open notification streams of one account across the replicas, then 429 RATE_LIMITED (FLEET_STREAMS_PER_ACCOUNT)")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", c.RequestTimeout, "bound on one request's work, then 503 (FLEET_REQUEST_TIMEOUT)")
	fs.IntVar(&c.TenantMaxInFlight, "tenant-max-in-flight", c.TenantMaxInFlight, "requests one tenant (an account; a subaccount counts as its parent) may have in flight on this replica, and so database connections it may hold; below --db-max-conns; 0: no bound (FLEET_TENANT_MAX_IN_FLIGHT)")
	fs.DurationVar(&c.TenantQueueTimeout, "tenant-queue-timeout", c.TenantQueueTimeout, "how long a request over its tenant's bound waits for a slot, then 429 RATE_LIMITED (FLEET_TENANT_QUEUE_TIMEOUT)")
	fs.DurationVar(&c.UsageFlushInterval, "usage-flush-interval", c.UsageFlushInterval, "add the usage counted in memory to the database this often; a crash loses at most this much of a replica's usage (FLEET_USAGE_FLUSH_INTERVAL)")
	fs.IntVar(&c.UsageMaxEntries, "usage-max-entries", c.UsageMaxEntries, "most (account, day, route) usage keys counted in memory between two flushes (FLEET_USAGE_MAX_ENTRIES)")
	fs.DurationVar(&c.LogFlushInterval, "log-flush-interval", c.LogFlushInterval, "how long log lines may wait in memory before they are written; 0 writes each at once (FLEET_LOG_FLUSH_INTERVAL)")
	fs.DurationVar(&c.CounterFoldInterval, "counter-fold-interval", c.CounterFoldInterval, "fold the row counters' stripes into one row per account this often; 0 never (FLEET_COUNTER_FOLD_INTERVAL)")
	fs.DurationVar(&c.PurgeInterval, "purge-interval", c.PurgeInterval, "purge expired idempotency keys and dead tokens this often; 0 never (FLEET_PURGE_INTERVAL)")
	fs.DurationVar(&c.ClockInterval, "clock-interval", c.ClockInterval, "sweep the clock's rules (connection_no, services due by the day) this often while this replica holds their lease; 0 never (FLEET_CLOCK_INTERVAL)")
	fs.DurationVar(&c.TokenRetention, "token-retention", c.TokenRetention, "keep a revoked or expired token this long, then purge it; 0 keeps it forever (FLEET_TOKEN_RETENTION)")
	fs.DurationVar(&c.PositionsRetention, "positions-retention", c.PositionsRetention, "keep positions and notifications this long (whole UTC days), refuse older readings (FLEET_POSITIONS_RETENTION)")
	fs.DurationVar(&c.DrainDelay, "drain-delay", c.DrainDelay, "on shutdown, how long /readyz answers 503 before the listener closes (FLEET_DRAIN_DELAY)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "how long in-flight requests may take to finish on shutdown (FLEET_SHUTDOWN_TIMEOUT)")
	fs.Func("database-read-urls", "comma-separated PostgreSQL URLs of streaming replicas for the client API's reads (FLEET_DATABASE_READ_URLS)", func(v string) error {
		c.ReadURLs = nil
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				c.ReadURLs = append(c.ReadURLs, item)
			}
		}
		return nil
	})
	fs.DurationVar(&c.ReplicaMaxLag, "replica-max-lag", c.ReplicaMaxLag, "skip a read replica that lags more than this (FLEET_REPLICA_MAX_LAG)")
}

// quotaString is a quota as parseQuota reads it.
func quotaString(q *int64) string {
	if q == nil {
		return "unlimited"
	}
	return strconv.FormatInt(*q, 10)
}

// databaseFlag registers --database-url on fs. Its default (from
// FLEET_DATABASE_URL) is shown in the usage with the password masked.
func (c *config) databaseFlag(fs *flag.FlagSet) {
	fs.Var(databaseURLValue{&c.DatabaseURL}, "database-url", "PostgreSQL URL (FLEET_DATABASE_URL; else "+storage.DefaultURL+")")
}

// databaseURLValue is the --database-url flag: a string whose printed
// form hides the password.
type databaseURLValue struct{ p *string }

func (v databaseURLValue) Set(s string) error { *v.p = s; return nil }

func (v databaseURLValue) String() string {
	if v.p == nil {
		return ""
	}
	if u, err := url.Parse(*v.p); err == nil {
		return u.Redacted()
	}
	return "(not a URL)"
}

// databaseCommand gives cmd the configuration from the environment and the
// flag --database-url: the set-up of the commands that only need a
// database. An environment that does not parse is cmd's set-up error,
// which cmd.parse returns.
func databaseCommand(cmd *command, getenv func(string) string) *config {
	cfg, err := defaultConfig(getenv)
	cmd.err = err
	cfg.databaseFlag(cmd.fs)
	return &cfg
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
