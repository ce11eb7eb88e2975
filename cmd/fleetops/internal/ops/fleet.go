package ops

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/fleetapi/fleetapi/storage"
)

// fleet runs the fleetapi binary with args against the database at dbURL
// and returns its output.
func (e *env) fleet(ctx context.Context, dbURL string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, e.bin, args...)
	cmd.Env = append(cleanEnviron(os.Environ()), "FLEET_DATABASE_URL="+dbURL)
	b, err := cmd.CombinedOutput()
	if err != nil {
		return string(b), fmt.Errorf("fleetapi %s: %w\n%s", strings.Join(args, " "), err, b)
	}
	return string(b), nil
}

// cleanEnviron is environ without FLEET_* and OTEL_* variables, so that a
// run's replicas get exactly the configuration it sets.
func cleanEnviron(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if strings.HasPrefix(kv, "FLEET_") || strings.HasPrefix(kv, "OTEL_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// runDatabase reports whether name is one a run may drop and create: the
// runs' own fleetapi_ops* databases, never another.
func runDatabase(name string) error {
	if !strings.HasPrefix(name, "fleetapi_ops") {
		return fmt.Errorf("refusing to manage database %q: only fleetapi_ops* databases are the runs' own", name)
	}
	return nil
}

// freshDatabase drops and re-creates (through the import) database name on
// the shared server, loads the demo data into it, and drops it at the end.
// It returns the database's URL.
func (e *env) freshDatabase(ctx context.Context, name string) (string, error) {
	if err := runDatabase(name); err != nil {
		return "", err
	}
	url, err := storage.WithDatabase(e.common.adminURL, name)
	if err != nil {
		return "", err
	}
	drop := func(ctx context.Context) error {
		db := storage.Open(e.common.adminURL, storage.Options{MaxOpenConns: 1})
		defer db.Close()
		_, err := db.ExecContext(ctx, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`)
		return err
	}
	if err := drop(ctx); err != nil {
		return "", fmt.Errorf("drop database %s: %w", name, err)
	}
	e.onClose(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := drop(ctx); err != nil {
			e.logf("drop database %s: %v", name, err)
			return
		}
		e.logf("dropped database %s", name)
	})
	if err := e.importDemo(ctx, url); err != nil {
		return "", err
	}
	e.logf("database %s created with the demo data", name)
	return url, nil
}

// importDemo loads storage/demodata/demodata.json (migrating first).
func (e *env) importDemo(ctx context.Context, dbURL string) error {
	_, err := e.fleet(ctx, dbURL, "import", filepath.Join(e.root, "storage", "demodata", "demodata.json"))
	return err
}

// token is an API token created for a run.
type token struct {
	ID     int64
	Secret string
}

// parseToken reads the token out of `fleetapi token create`'s output: the
// token's id line, then the secret alone on the last line.
func parseToken(out string) (token, error) {
	tokenLine := regexp.MustCompile(`(?m)^token (\d+) .*\n(flt_[0-9A-Za-z]{32})\s*$`)
	m := tokenLine.FindStringSubmatch(out)
	if m == nil {
		return token{}, fmt.Errorf("token create: no token in the output:\n%s", out)
	}
	id, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return token{}, fmt.Errorf("token create: id %q: %w", m[1], err)
	}
	return token{ID: id, Secret: m[2]}, nil
}

// createToken creates a token with every permission for account; a
// rateLimit of 0 leaves the server's default.
func (e *env) createToken(ctx context.Context, dbURL, account, name string, rateLimit int) (token, error) {
	args := []string{"token", "create", "--account", account, "--permission", "*", "--name", name}
	if rateLimit > 0 {
		args = append(args, "--rate-limit", strconv.Itoa(rateLimit))
	}
	out, err := e.fleet(ctx, dbURL, args...)
	if err != nil {
		return token{}, err
	}
	return parseToken(out)
}
