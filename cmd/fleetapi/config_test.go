package main

import (
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
