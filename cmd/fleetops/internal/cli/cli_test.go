package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
)

// TestCheckHTTP enumerates the ways a base URL can leave the machine.
func TestCheckHTTP(t *testing.T) {
	for _, ok := range []string{"http://127.0.0.1:8080", "http://localhost:1", "http://LOCALHOST:1", "http://[::1]:80",
		"https://127.0.0.2", "http://127.255.255.254:9", "http://[::ffff:127.0.0.1]:80"} {
		if err := CheckHTTP("--url", ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"http://10.0.0.1:8080", "http://example.com", "ftp://127.0.0.1", "127.0.0.1:8080",
		"http://0.0.0.0:80", "http://[::]:80", "http://128.0.0.1", "http://127.0.0.1.example.com", "http://localhost.example.com",
		"http://192.168.1.1@127.0.0.1.nip.io/", "http:///path", "", "http://[fe80::1]:80", "http://2130706433/"} {
		err := CheckHTTP("--url", bad)
		if err == nil {
			t.Errorf("%s accepted", bad)
			continue
		}
		if !IsUsage(err) || !strings.Contains(err.Error(), "--url") {
			t.Errorf("%s: %v (want a usage error naming --url)", bad, err)
		}
	}
}

func TestCheckPostgres(t *testing.T) {
	for _, ok := range []string{
		"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		"postgresql://u:p@localhost/db",
		"postgres://postgres@[::1]:5432/x",
		"postgres://postgres@/fleetapi?host=%2Ftmp%2Fpg%2Fsocket%2F.s.PGSQL.5432&sslmode=disable",
		"postgres://postgres@127.0.0.1/x?host=127.0.0.2",
		"postgres:///fleetapi",
	} {
		if err := CheckPostgres("--pg", ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{
		"postgres://postgres@10.1.2.3:5432/postgres",
		"postgres://postgres@db.example.com/postgres",
		"postgres://postgres@127.0.0.1/x?host=db.example.com", // the parameter wins in the driver
		"postgres://postgres@/x?host=10.0.0.1",
		"mysql://127.0.0.1/x",
		"host=127.0.0.1 dbname=x",
	} {
		if err := CheckPostgres("--pg", bad); err == nil || !IsUsage(err) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestCheckRedis(t *testing.T) {
	for _, ok := range []string{"redis://127.0.0.1:6379/0", "redis://localhost:6379", "rediss://[::1]:6380/1", "unix:///tmp/redis.sock"} {
		if err := CheckRedis("--redis", ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"redis://10.0.0.5:6379/0", "redis://cache.example.com:6379", "redis:///0", "http://127.0.0.1:6379", "127.0.0.1:6379"} {
		if err := CheckRedis("--redis", bad); err == nil || !IsUsage(err) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestCheckAddr(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:8080", "[::1]:1", "127.9.9.9:0"} {
		if err := CheckAddr("replica address", ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"0.0.0.0:8080", "[::]:80", "10.0.0.1:80", "127.0.0.1", ""} {
		if err := CheckAddr("replica address", bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestParse(t *testing.T) {
	newFS := func() (*flag.FlagSet, *int) {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		return fs, fs.Int("n", 3, "how many")
	}
	for _, help := range []string{"-h", "--help", "-help"} {
		fs, _ := newFS()
		var out bytes.Buffer
		err := Parse(fs, []string{help}, &out, "usage: x [flags]\n")
		if !errors.Is(err, flag.ErrHelp) || IsUsage(err) {
			t.Errorf("%s: %v", help, err)
		}
		if !strings.HasPrefix(out.String(), "usage: x [flags]\n") || !strings.Contains(out.String(), "-n int") {
			t.Errorf("%s printed %q", help, out.String())
		}
	}
	for _, args := range [][]string{{"-bogus"}, {"-n", "many"}, {"-n"}, {"extra"}, {"-n", "1", "extra"}} {
		fs, _ := newFS()
		var out bytes.Buffer
		if err := Parse(fs, args, &out, "usage\n"); !IsUsage(err) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
		if out.Len() != 0 {
			t.Errorf("%v printed %q on stdout", args, out.String())
		}
	}
	fs, n := newFS()
	if err := Parse(fs, []string{"-n", "7"}, &bytes.Buffer{}, ""); err != nil || *n != 7 {
		t.Errorf("-n 7: %d, %v", *n, err)
	}
	if !IsUsage(fmt.Errorf("wrapped: %w", Usagef("x"))) || IsUsage(errors.New("x")) {
		t.Error("IsUsage")
	}
}
