package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
)

func noEnv(string) string { return "" }

// TestHelp: fleetops -h (and its spellings) prints the usage with every
// run on stdout and exits 0.
func TestHelp(t *testing.T) {
	for _, arg := range []string{"-h", "-help", "--help", "help"} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{arg}, noEnv, &out)
		if code := exitCode(err, &errOut); code != 0 || errOut.Len() != 0 {
			t.Errorf("%s: exit %d, stderr %q", arg, code, errOut.String())
		}
		for _, c := range commands() {
			if !strings.Contains(out.String(), "  "+c.name+" ") {
				t.Errorf("%s: usage lacks %q:\n%s", arg, c.name, out.String())
			}
		}
	}
}

// TestRunHelp: every run answers -h with its own usage and flags on
// stdout, exit 0, and starts nothing.
func TestRunHelp(t *testing.T) {
	want := map[string][]string{ // a flag of each run, and the common ones
		"replicas":  {"-redis", "-window", "-failover", "-stop-at", "-redis-outage", "-pg", "-keep"},
		"load":      {"-duration", "-warmup", "-limit-window", "-pg", "-keep"},
		"outage":    {"-before", "-down", "-after", "-freeze", "-pg", "-keep"},
		"flood":     {"-phase", "-good", "-slow", "-pg", "-keep"},
		"standby":   {"-step", "-max-lag", "-concurrency", "-max-requests", "-pg", "-keep"},
		"failover":  {"-step", "-how", "-concurrency", "-max-requests", "-pg", "-keep"},
		"bench":     {"-tokens", "-url", "-database-url", "-explain", "-markdown", "-server-pid"},
		"httpfloor": {"-addr", "-body"},
	}
	if len(want) != len(commands()) {
		t.Fatalf("commands %v, want %d", commands(), len(want))
	}
	for _, c := range commands() {
		for _, h := range []string{"-h", "--help"} {
			var out, errOut bytes.Buffer
			err := run(context.Background(), []string{c.name, h}, noEnv, &out)
			if !errors.Is(err, flag.ErrHelp) || exitCode(err, &errOut) != 0 || errOut.Len() != 0 {
				t.Errorf("%s %s: %v (stderr %q)", c.name, h, err, errOut.String())
			}
			if !strings.HasPrefix(out.String(), "usage: fleetops "+c.name) {
				t.Errorf("%s %s: usage %q", c.name, h, out.String())
			}
			for _, f := range want[c.name] {
				if !strings.Contains(out.String(), "  "+f+" ") && !strings.Contains(out.String(), "  "+f+"\n") {
					t.Errorf("%s %s: no %s in\n%s", c.name, h, f, out.String())
				}
			}
		}
	}
}

// TestUsageErrors enumerates the ways to call fleetops wrongly: each exits
// 2 with the error on stderr, prints nothing on stdout, and starts
// nothing (a run that started would build ./cmd/fleetapi and need
// minutes).
func TestUsageErrors(t *testing.T) {
	cases := [][]string{
		{},
		{"nosuchrun"},
		{"--pg", "postgres://postgres@127.0.0.1/postgres"}, // a flag before the run
		{"bench", "--tokens", "t", "--url", "http://192.0.2.1:8080"},
		{"bench", "--tokens", "t", "--database-url", "postgres://u@192.0.2.1/x"},
		{"bench", "--tokens", "t", "--concurrency", "0"},
		{"bench"},
		{"replicas", "--redis", "redis://192.0.2.1:6379/0"},
		{"httpfloor", "--addr", "192.0.2.1:8080"},
		{"httpfloor", "--body", "/nonexistent/fleetops-body"},
	}
	for _, c := range commands() {
		cases = append(cases,
			[]string{c.name, "--bogus"},
			[]string{c.name, "extra-argument"},
			[]string{c.name, "--concurrency", "many"},
		)
		if c.name != "bench" && c.name != "httpfloor" {
			cases = append(cases,
				[]string{c.name, "--pg", "postgres://postgres@192.0.2.1:5432/postgres"},
				[]string{c.name, "--pg", "postgres://postgres@127.0.0.1/postgres?host=db.example.com"},
				[]string{c.name, "--pg", "http://127.0.0.1:5432"},
			)
		}
	}
	for _, args := range cases {
		var out, errOut bytes.Buffer
		err := run(context.Background(), args, noEnv, &out)
		if code := exitCode(err, &errOut); code != 2 {
			t.Errorf("%q: exit %d (%v), want 2", args, code, err)
		}
		if out.Len() != 0 {
			t.Errorf("%q printed on stdout: %q", args, out.String())
		}
		if !strings.HasPrefix(errOut.String(), "fleetops: ") {
			t.Errorf("%q: stderr %q", args, errOut.String())
		}
	}
}

func TestExitCode(t *testing.T) {
	var errOut bytes.Buffer
	if code := exitCode(errors.New("2 check(s) failed: x; y"), &errOut); code != 1 || errOut.String() != "fleetops: 2 check(s) failed: x; y\n" {
		t.Errorf("a failure: exit %d, stderr %q", code, errOut.String())
	}
	errOut.Reset()
	if code := exitCode(nil, &errOut); code != 0 || errOut.Len() != 0 {
		t.Errorf("success: exit %d, stderr %q", code, errOut.String())
	}
}
