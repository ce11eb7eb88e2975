package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/fleetapi/fleetapi/storage"
)

// config is the configuration of the server commands (DESIGN §7).
type config struct {
	DatabaseURL     string
	Addr            string
	PolicyDir       string
	DecisionLog     string
	RateLimit       int
	RedisURL        string
	MetricsAddr     string
	ShutdownTimeout time.Duration
	// ReadHeaderTimeout bounds how long a client may take to send its
	// request headers (slow clients cannot hold connections).
	ReadHeaderTimeout time.Duration
	NoMigrate         bool
}

// defaultConfig reads the FLEET_* variables, with DESIGN §7's defaults.
func defaultConfig(getenv func(string) string) (config, error) {
	c := config{
		DatabaseURL:       getenv("FLEET_DATABASE_URL"),
		Addr:              orDefault(getenv("FLEET_ADDR"), "127.0.0.1:8080"),
		PolicyDir:         getenv("FLEET_POLICY_DIR"),
		DecisionLog:       orDefault(getenv("FLEET_DECISION_LOG"), "off"),
		RedisURL:          getenv("FLEET_REDIS_URL"),
		MetricsAddr:       getenv("FLEET_METRICS_ADDR"),
		RateLimit:         1200,
		ShutdownTimeout:   15 * time.Second,
		ReadHeaderTimeout: 5 * time.Second,
	}
	if v := getenv("FLEET_READ_HEADER_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return c, fmt.Errorf("FLEET_READ_HEADER_TIMEOUT=%q: want a positive duration", v)
		}
		c.ReadHeaderTimeout = d
	}
	if v := getenv("FLEET_RATE_LIMIT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return c, fmt.Errorf("FLEET_RATE_LIMIT=%q: want a positive integer", v)
		}
		c.RateLimit = n
	}
	return c, nil
}

// databaseURL is the configured database, or DESIGN §7's default.
func (c config) databaseURL() string { return orDefault(c.DatabaseURL, storage.DefaultURL) }

// flags registers the server flags on fs, defaulting to c's values.
func (c *config) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.DatabaseURL, "database-url", c.DatabaseURL, "PostgreSQL URL (FLEET_DATABASE_URL)")
	fs.StringVar(&c.Addr, "addr", c.Addr, "listen address (FLEET_ADDR)")
	fs.StringVar(&c.PolicyDir, "policy-dir", c.PolicyDir, "load the Rego policy set from this directory instead of the embedded one (FLEET_POLICY_DIR)")
	fs.StringVar(&c.DecisionLog, "decision-log", c.DecisionLog, "decision log: stdout, a file path, or off (FLEET_DECISION_LOG)")
	fs.IntVar(&c.RateLimit, "rate-limit", c.RateLimit, "default per-token requests per minute (FLEET_RATE_LIMIT)")
	fs.StringVar(&c.RedisURL, "redis-url", c.RedisURL, "Redis URL for rate limits shared by every replica (FLEET_REDIS_URL)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", c.MetricsAddr, "serve /metrics, /healthz and /readyz on this address instead of the API's (FLEET_METRICS_ADDR)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "how long in-flight requests may take to finish on shutdown")
}

func newFlagSet(name string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("fleetapi "+name, flag.ContinueOnError)
	fs.SetOutput(stdout)
	return fs
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
