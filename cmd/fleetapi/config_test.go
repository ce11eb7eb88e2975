package main

import (
	"context"
	"flag"
	"math"
	"strings"
	"testing"
	"time"
)

// TestReadReplicaConfig: FLEET_DATABASE_READ_URLS, FLEET_REPLICA_MAX_LAG
// and FLEET_REPLICA_CHECK_INTERVAL, their defaults, and every value the
// server refuses before it starts.
func TestReadReplicaConfig(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	c, err := defaultConfig(env(nil))
	if err != nil || c.ReadURLs != nil || c.ReplicaMaxLag != 5*time.Second || c.ReplicaCheckInterval != time.Second {
		t.Fatalf("defaults: %v %q %s %s", err, c.ReadURLs, c.ReplicaMaxLag, c.ReplicaCheckInterval)
	}
	c, err = defaultConfig(env(map[string]string{
		"FLEET_DATABASE_READ_URLS": "postgres://r1/fleetapi, postgresql://r2/fleetapi?sslmode=disable",
		"FLEET_REPLICA_MAX_LAG":    "200ms", "FLEET_REPLICA_CHECK_INTERVAL": "50ms",
	}))
	if err != nil || len(c.ReadURLs) != 2 || c.ReadURLs[1] != "postgresql://r2/fleetapi?sslmode=disable" ||
		c.ReplicaMaxLag != 200*time.Millisecond || c.ReplicaCheckInterval != 50*time.Millisecond {
		t.Fatalf("set: %v %q %s %s", err, c.ReadURLs, c.ReplicaMaxLag, c.ReplicaCheckInterval)
	}
	for name, vars := range map[string]map[string]string{
		"not a postgres URL": {"FLEET_DATABASE_READ_URLS": "mysql://r1/fleetapi"},
		"an empty item":      {"FLEET_DATABASE_READ_URLS": "postgres://r1/fleetapi,"},
		"zero lag":           {"FLEET_REPLICA_MAX_LAG": "0s"},
		"zero interval":      {"FLEET_REPLICA_CHECK_INTERVAL": "0"},
		"negative lag":       {"FLEET_REPLICA_MAX_LAG": "-1s"},
		"not a duration":     {"FLEET_REPLICA_MAX_LAG": "5"},
	} {
		if _, err := defaultConfig(env(vars)); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "r1") {
			t.Errorf("%s: the error repeats the URL (it may hold a password): %v", name, err)
		}
	}
}

// TestPolicySettleConfig: FLEET_POLICY_SETTLE defaults to the engine's
// settle time, reaches the engine's options, and 0 means no wait (which
// the engine's options spell as a negative value, 0 being its default).
func TestPolicySettleConfig(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	for v, want := range map[string]time.Duration{"": time.Second, "250ms": 250 * time.Millisecond, "0": -1} {
		c, err := defaultConfig(env(map[string]string{"FLEET_POLICY_SETTLE": v}))
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		o, err := c.policySource()
		if err != nil || o.DirSettle != want {
			t.Errorf("FLEET_POLICY_SETTLE=%q: DirSettle %s (%v), want %s", v, o.DirSettle, err, want)
		}
	}
	for _, v := range []string{"-1s", "soon"} {
		if _, err := defaultConfig(env(map[string]string{"FLEET_POLICY_SETTLE": v})); err == nil {
			t.Errorf("FLEET_POLICY_SETTLE=%q accepted", v)
		}
	}
}

// TestQuotaConfig: the platform default quotas come from FLEET_QUOTA_*
// and --quota-* (a number of rows, 0 or more, or "unlimited"), with
// defaults; a malformed value (negative, not an integer, too large, a
// spelling of unlimited other than "unlimited", blanks) stops the server
// before it starts, naming the variable or flag and what it wants.
func TestQuotaConfig(t *testing.T) {
	c, err := defaultConfig(envOf(nil))
	if err != nil || c.Quotas != defaultQuotas {
		t.Fatalf("defaults: %v %+v", err, c.Quotas)
	}
	c, err = defaultConfig(envOf(map[string]string{
		"FLEET_QUOTA_SUBACCOUNTS": "0", "FLEET_QUOTA_TOKENS": "unlimited", "FLEET_QUOTA_DEVICES": "5",
		"FLEET_QUOTA_PASSENGERS": "9223372036854775807",
	}))
	if err != nil || *c.Quotas.Subaccounts != 0 || c.Quotas.Tokens != nil || *c.Quotas.Devices != 5 || *c.Quotas.Passengers != math.MaxInt64 {
		t.Fatalf("from the environment: %v %+v", err, c.Quotas)
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c.flags(fs)
	if err := fs.Parse([]string{"--quota-devices=7", "--quota-tokens", "12", "--quota-passengers=unlimited"}); err != nil {
		t.Fatal(err)
	}
	if *c.Quotas.Devices != 7 || *c.Quotas.Tokens != 12 || c.Quotas.Passengers != nil || *c.Quotas.Subaccounts != 0 {
		t.Fatalf("flags over the environment: %+v", c.Quotas)
	}
	const want = "want 0 or a positive integer, or unlimited"
	for _, v := range []string{"-1", "x", "1.5", "1e3", "9223372036854775808", "Unlimited", "none", " 5", "5 ", "0x10", "+"} {
		for _, q := range []string{"subaccounts", "tokens", "devices", "passengers"} {
			name := "FLEET_QUOTA_" + strings.ToUpper(q)
			_, err := defaultConfig(envOf(map[string]string{name: v}))
			if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), want) {
				t.Errorf("%s=%q: %v, want an error naming it and %q", name, v, err, want)
			}
			var stdout, stderr syncBuffer
			code := mainWith(context.Background(), []string{"serve", "--quota-" + q + "=" + v}, envOf(nil), &stdout, &stderr)
			if code != exitUsage || !strings.Contains(stderr.String(), "-quota-"+q) || !strings.Contains(stderr.String(), want) {
				t.Errorf("serve --quota-%s=%q: exit %d, stderr %q; want %d naming the flag and %q", q, v, code, stderr.String(), exitUsage, want)
			}
		}
	}
}

// TestPurgeConfig: FLEET_PURGE_INTERVAL and FLEET_TOKEN_RETENTION, their
// defaults (10 minutes, 30 days), 0 (never, forever), and the values the
// server refuses before it starts.
func TestPurgeConfig(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	c, err := defaultConfig(env(nil))
	if err != nil || c.PurgeInterval != 10*time.Minute || c.TokenRetention != 30*24*time.Hour {
		t.Fatalf("defaults: %v %s %s", err, c.PurgeInterval, c.TokenRetention)
	}
	c, err = defaultConfig(env(map[string]string{"FLEET_PURGE_INTERVAL": "0", "FLEET_TOKEN_RETENTION": "0"}))
	if err != nil || c.PurgeInterval != 0 || c.TokenRetention != 0 {
		t.Fatalf("zero: %v %s %s", err, c.PurgeInterval, c.TokenRetention)
	}
	for _, vars := range []map[string]string{{"FLEET_PURGE_INTERVAL": "-1m"}, {"FLEET_TOKEN_RETENTION": "30d"}, {"FLEET_TOKEN_RETENTION": "-1h"}} {
		if _, err := defaultConfig(env(vars)); err == nil {
			t.Errorf("%v accepted", vars)
		}
	}
}

// TestClockConfig: FLEET_CLOCK_INTERVAL, its default (15 s), 0 (this
// replica never sweeps) and the values refused.
func TestClockConfig(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	c, err := defaultConfig(env(nil))
	if err != nil || c.ClockInterval != 15*time.Second {
		t.Fatalf("default: %v %s", err, c.ClockInterval)
	}
	c, err = defaultConfig(env(map[string]string{"FLEET_CLOCK_INTERVAL": "0"}))
	if err != nil || c.ClockInterval != 0 {
		t.Fatalf("zero: %v %s", err, c.ClockInterval)
	}
	for _, v := range []string{"-1s", "15", "soon"} {
		if _, err := defaultConfig(env(map[string]string{"FLEET_CLOCK_INTERVAL": v})); err == nil {
			t.Errorf("FLEET_CLOCK_INTERVAL=%s accepted", v)
		}
	}
}

// TestTenantBoundConfig: FLEET_TENANT_MAX_IN_FLIGHT (default 4, 0 off)
// and FLEET_TENANT_QUEUE_TIMEOUT (default 1 s), their flags, and the
// refusal of a bound that is not below the pool (FLEET_DB_MAX_CONNS).
func TestTenantBoundConfig(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	c, err := defaultConfig(env(nil))
	if err != nil || c.TenantMaxInFlight != 4 || c.TenantQueueTimeout != time.Second || c.checkTenantBound() != nil {
		t.Fatalf("defaults: %v %d %s %v", err, c.TenantMaxInFlight, c.TenantQueueTimeout, c.checkTenantBound())
	}
	c, err = defaultConfig(env(map[string]string{"FLEET_TENANT_MAX_IN_FLIGHT": "0", "FLEET_TENANT_QUEUE_TIMEOUT": "250ms"}))
	if err != nil || c.TenantMaxInFlight != 0 || c.TenantQueueTimeout != 250*time.Millisecond || c.checkTenantBound() != nil {
		t.Fatalf("set: %v %d %s", err, c.TenantMaxInFlight, c.TenantQueueTimeout)
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c.flags(fs)
	if err := fs.Parse([]string{"--tenant-max-in-flight", "16", "--tenant-queue-timeout", "2s"}); err != nil {
		t.Fatal(err)
	}
	if c.TenantMaxInFlight != 16 || c.TenantQueueTimeout != 2*time.Second {
		t.Fatalf("flags: %d %s", c.TenantMaxInFlight, c.TenantQueueTimeout)
	}
	if err := c.checkTenantBound(); err == nil || !strings.Contains(err.Error(), "FLEET_DB_MAX_CONNS (16)") {
		t.Errorf("a bound equal to the pool: %v", err)
	}
	for _, v := range []string{"-1", "four", "1.5"} {
		if _, err := defaultConfig(env(map[string]string{"FLEET_TENANT_MAX_IN_FLIGHT": v})); err == nil {
			t.Errorf("FLEET_TENANT_MAX_IN_FLIGHT=%q accepted", v)
		}
	}
	if _, err := defaultConfig(env(map[string]string{"FLEET_TENANT_QUEUE_TIMEOUT": "-1s"})); err == nil {
		t.Error("FLEET_TENANT_QUEUE_TIMEOUT=-1s accepted")
	}
}

// TestWebhookSenderConfig: the sender's variables, their defaults and
// the values refused.
func TestWebhookSenderConfig(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	c, err := defaultConfig(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.WebhookWorkers != 16 || c.WebhookEndpointInflight != 2 || len(c.WebhookRetries) != 7 || c.WebhookDisableAfter != 120*time.Hour || c.WebhookTimeout != 15*time.Second {
		t.Fatalf("defaults: %d %d %v %v %v", c.WebhookWorkers, c.WebhookEndpointInflight, c.WebhookRetries, c.WebhookDisableAfter, c.WebhookTimeout)
	}
	c, err = defaultConfig(env(map[string]string{"FLEET_WEBHOOK_WORKERS": "3", "FLEET_WEBHOOK_ENDPOINT_INFLIGHT": "1",
		"FLEET_WEBHOOK_RETRIES": "100ms,200ms", "FLEET_WEBHOOK_DISABLE_AFTER": "2s", "FLEET_WEBHOOK_TIMEOUT": "1s"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.WebhookWorkers != 3 || c.WebhookEndpointInflight != 1 || len(c.WebhookRetries) != 2 || c.WebhookRetries[1] != 200*time.Millisecond ||
		c.WebhookDisableAfter != 2*time.Second || c.WebhookTimeout != time.Second {
		t.Fatalf("set: %+v", c)
	}
	// 0 workers: this replica sends nothing (the others do)
	if c, err := defaultConfig(env(map[string]string{"FLEET_WEBHOOK_WORKERS": "0"})); err != nil || c.WebhookWorkers != 0 {
		t.Fatalf("0 workers: %v %d", err, c.WebhookWorkers)
	}
	for name, v := range map[string]string{"FLEET_WEBHOOK_WORKERS": "-1", "FLEET_WEBHOOK_ENDPOINT_INFLIGHT": "0",
		"FLEET_WEBHOOK_RETRIES": "soon", "FLEET_WEBHOOK_DISABLE_AFTER": "0s", "FLEET_WEBHOOK_TIMEOUT": "1m"} {
		if _, err := defaultConfig(env(map[string]string{name: v})); err == nil {
			t.Errorf("%s=%s accepted", name, v)
		}
	}
}
