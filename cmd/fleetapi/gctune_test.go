package main

import "testing"

// TestGCSettings: the server's collector settings apply to serve and dev
// only, and never over GOGC or GOMEMLIMIT from the environment.
func TestGCSettings(t *testing.T) {
	none := func(string) string { return "" }
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want bool
	}{
		{[]string{"serve"}, nil, true},
		{[]string{"dev", "--addr", "x"}, nil, true},
		{[]string{"serve"}, map[string]string{"GOGC": "100"}, false},
		{[]string{"serve"}, map[string]string{"GOMEMLIMIT": "1GiB"}, false},
		{[]string{"generate"}, nil, false},
		{[]string{"migrate", "serve"}, nil, false},
		{nil, nil, false},
	} {
		getenv := none
		if tc.env != nil {
			getenv = func(k string) string { return tc.env[k] }
		}
		percent, limit, ok := gcSettings(tc.args, getenv)
		if ok != tc.want || ok && (percent != serveGCPercent || limit != serveMemoryLimit) {
			t.Errorf("%v %v: %d %d %v", tc.args, tc.env, percent, limit, ok)
		}
	}
}
