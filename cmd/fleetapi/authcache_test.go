package main

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// metricValue returns the value of the first series of /metrics whose
// line starts with name and contains every label given; -1 when none.
func metricValue(t *testing.T, addr, name string, labels ...string) float64 {
	t.Helper()
	_, body := get(t, "http://"+addr+"/metrics")
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		return v
	}
	return -1
}

// TestServeAuthCache: serve wires the authentication cache: on by
// default (its listener connects and known tokens are served from it),
// off with FLEET_AUTH_CACHE_SIZE=0, and with a listener URL that cannot
// be reached every request still works, authenticated in PostgreSQL.
func TestServeAuthCache(t *testing.T) {
	db := storagetest.New(t)
	base := map[string]string{"FLEET_DATABASE_URL": db.URL, "FLEET_ADDR": "127.0.0.1:0"}
	runOK(t, base, "import", writeDemoFile(t))
	tok := demodata.Tokens()[0].Secret
	client := &http.Client{Timeout: 10 * time.Second}
	with := func(kv ...string) map[string]string {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return env
	}
	call := func(t *testing.T, addr string) {
		t.Helper()
		for range 3 {
			if st, code, _, err := getStatus(client, "http://"+addr+"/api/v2/me", tok); err != nil || st != 200 {
				t.Fatalf("GET /me: %d %s %v", st, code, err)
			}
		}
	}

	t.Run("default_on", func(t *testing.T) {
		addr, logs := startServe(t, with())
		waitLog(t, logs, `"msg":"auth cache listener connected"`)
		call(t, addr)
		if v := metricValue(t, addr, "fleet_auth_listener_connected"); v != 1 {
			t.Errorf("fleet_auth_listener_connected %v, want 1", v)
		}
		if v := metricValue(t, addr, "fleet_auth_cache_total", `result="hit"`); v < 2 {
			t.Errorf("cache hits %v, want at least 2 of 3 requests", v)
		}
	})
	t.Run("off", func(t *testing.T) {
		addr, logs := startServe(t, with("FLEET_AUTH_CACHE_SIZE", "0"))
		waitLog(t, logs, `"msg":"auth cache off"`)
		call(t, addr)
		if v := metricValue(t, addr, "fleet_auth_listener_connected"); v != -1 {
			t.Errorf("fleet_auth_listener_connected %v with the cache off, want no series", v)
		}
	})
	t.Run("listener_unreachable", func(t *testing.T) {
		addr, logs := startServe(t, with("FLEET_DATABASE_LISTEN_URL", "postgres://postgres@127.0.0.1:1/none?sslmode=disable"))
		waitLog(t, logs, `auth cache listener disconnected`)
		call(t, addr)
		if v := metricValue(t, addr, "fleet_auth_listener_connected"); v != 0 {
			t.Errorf("fleet_auth_listener_connected %v, want 0", v)
		}
		if v := metricValue(t, addr, "fleet_auth_cache_total", `result="bypass"`); v < 3 {
			t.Errorf("bypasses %v, want every request", v)
		}
	})
	t.Run("bad_size", func(t *testing.T) {
		r := runMain(t, with("FLEET_AUTH_CACHE_SIZE", "-1"), "serve")
		if r.code == 0 || !strings.Contains(r.stderr+r.stdout, "FLEET_AUTH_CACHE_SIZE") {
			t.Fatalf("FLEET_AUTH_CACHE_SIZE=-1: exit %d, %s%s", r.code, r.stdout, r.stderr)
		}
	})
}
