package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage/pgserver"
)

// PgBouncerEnv names the environment variable that puts the test helper in
// PgBouncer mode: with "1", every database New hands out is reached
// through a PgBouncer in transaction-pooling mode started for the test
// process (the databases themselves are still created and dropped directly
// on PostgreSQL). .ci/run runs the API and storage tests a second time so.
const PgBouncerEnv = "FLEET_TEST_PGBOUNCER"

// PgBouncerMode reports whether the test helper runs in PgBouncer mode.
func PgBouncerMode() bool { return os.Getenv(PgBouncerEnv) == "1" }

// PgBouncerOptions are the settings of a PgBouncer the tests start; the
// zero value is fleetapi's recommended transaction-pooling setup
// (docs/operations.md).
type PgBouncerOptions struct {
	// PoolMode is "transaction" (the default), "session" or "statement".
	PoolMode string
	// DefaultPoolSize is the number of server connections per database
	// and user (default 4, fewer than the clients the tests open, so that
	// client connections really share server connections).
	DefaultPoolSize int
	// MaxUserConnections caps the server connections of the user over all
	// databases (default 24): a test process never takes more than that
	// from PostgreSQL's max_connections.
	MaxUserConnections int
}

// PgBouncer is a pgbouncer process in front of a test PostgreSQL, listening
// on 127.0.0.1 on a free port. It runs until Stop or until the test process
// exits (it gets SIGTERM when its parent dies).
type PgBouncer struct {
	// Host and Port are where clients connect.
	Host string
	Port int
	// serverURL is the PostgreSQL behind it, as the helper found it.
	serverURL string
	cmd       *exec.Cmd
	exited    chan struct{}
	log       *tailBuffer
}

// URL returns the URL of database name through the PgBouncer, with the
// user and options of the PostgreSQL URL behind it (a unix-socket host
// parameter is dropped: clients reach PgBouncer over TCP).
func (b *PgBouncer) URL(name string) string {
	u, err := url.Parse(b.serverURL)
	if err != nil {
		u = &url.URL{Scheme: "postgres", User: url.User("postgres")}
	}
	q := u.Query()
	q.Del("host")
	q.Set("sslmode", "disable")
	u.Host = net.JoinHostPort(b.Host, strconv.Itoa(b.Port))
	u.Path = "/" + name
	u.RawQuery = q.Encode()
	return u.String()
}

// AdminURL returns the URL of PgBouncer's admin console (the virtual
// database "pgbouncer"; SHOW POOLS, SHOW CONFIG ...). Queries there must use
// the simple protocol, which fleetapi's driver does.
func (b *PgBouncer) AdminURL() string { return b.URL("pgbouncer") }

// Log returns the end of PgBouncer's log (its stderr).
func (b *PgBouncer) Log() string { return b.log.String() }

// Stop terminates the PgBouncer and waits for it to exit.
func (b *PgBouncer) Stop() {
	if b.cmd.Process != nil {
		_ = b.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-b.exited:
	case <-time.After(10 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.exited
	}
}

// StartPgBouncer starts a pgbouncer (the Debian package's binary on PATH or
// in /usr/sbin) in front of the PostgreSQL at serverURL: every database of
// that server is reachable through it (a "*" entry in [databases]), with
// trust authentication for the server URL's user. Its configuration lives
// in a temporary folder that is removed once it listens.
func StartPgBouncer(serverURL string, opts PgBouncerOptions) (*PgBouncer, error) {
	bin, err := pgbouncerBinary()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for range 3 { // a free port may be taken between probing and binding
		b, err := startPgBouncer(bin, serverURL, opts)
		if err == nil {
			return b, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func pgbouncerBinary() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/pgbouncer"); err == nil {
		return "/usr/sbin/pgbouncer", nil
	}
	return "", errors.New("pgbouncer is not installed (Debian: apt-get install pgbouncer; .ci/run installs it)")
}

func startPgBouncer(bin, serverURL string, opts PgBouncerOptions) (*PgBouncer, error) {
	backend, userName, password, err := pgbouncerBackend(serverURL)
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "fleetapi-pgbouncer-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir) // read at start-up only
	// pgbouncer refuses to run as root; then it runs as postgres and must
	// read its folder.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	users := filepath.Join(dir, "userlist.txt")
	if err := os.WriteFile(users, []byte(quoteUserlist(userName)+" "+quoteUserlist(password)+"\n"), 0o644); err != nil {
		return nil, err
	}
	ini := filepath.Join(dir, "pgbouncer.ini")
	if err := os.WriteFile(ini, []byte(pgbouncerIni(backend, port, users, userName, opts)), 0o644); err != nil {
		return nil, err
	}
	b := &PgBouncer{Host: "127.0.0.1", Port: port, serverURL: serverURL, exited: make(chan struct{}), log: &tailBuffer{max: 64 << 10}}
	b.cmd = exec.Command(bin, ini)
	b.cmd.Stdout, b.cmd.Stderr = b.log, b.log
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if os.Geteuid() == 0 {
		cred, err := pgserver.PostgresCredential()
		if err != nil {
			return nil, fmt.Errorf("pgbouncer does not run as root and there is no postgres user to run it as: %w", err)
		}
		b.cmd.SysProcAttr.Credential = cred
	}
	started := make(chan error, 1)
	go func() {
		// The parent-death signal belongs to the thread that started the
		// process: keep this goroutine on its thread for the process's
		// life, so the thread does not exit before the test process does.
		runtime.LockOSThread()
		if err := b.cmd.Start(); err != nil {
			started <- err
			close(b.exited)
			return
		}
		started <- nil
		_ = b.cmd.Wait()
		close(b.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start pgbouncer: %w", err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(b.Host, strconv.Itoa(port)), time.Second)
		if err == nil {
			c.Close()
			return b, nil
		}
		select {
		case <-b.exited:
			return nil, fmt.Errorf("pgbouncer exited at start-up: %s", b.Log())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.Stop()
			return nil, fmt.Errorf("pgbouncer did not listen on port %d within 15s: %s", port, b.Log())
		}
	}
}

// pgbouncerIni is the configuration of a test PgBouncer: the settings
// docs/operations.md recommends, on a test scale.
func pgbouncerIni(backend string, port int, users, userName string, opts PgBouncerOptions) string {
	if opts.PoolMode == "" {
		opts.PoolMode = "transaction"
	}
	if opts.DefaultPoolSize == 0 {
		opts.DefaultPoolSize = 4
	}
	if opts.MaxUserConnections == 0 {
		opts.MaxUserConnections = 24
	}
	lines := []string{
		"[databases]",
		"* = " + backend,
		"[pgbouncer]",
		"listen_addr = 127.0.0.1",
		"listen_port = " + strconv.Itoa(port),
		"unix_socket_dir =",
		"auth_type = trust",
		"auth_file = " + users,
		"admin_users = " + userName,
		"pool_mode = " + opts.PoolMode,
		"default_pool_size = " + strconv.Itoa(opts.DefaultPoolSize),
		"max_user_connections = " + strconv.Itoa(opts.MaxUserConnections),
		"max_client_conn = 2000",
		// Applied only in session mode; transaction mode never resets.
		"server_reset_query = DISCARD ALL",
		"ignore_startup_parameters = extra_float_digits",
		// A client that waits longer than this for a server connection
		// gets an error instead of hanging a test.
		"query_wait_timeout = 60",
		"log_connections = 0",
		"log_disconnections = 0",
		"",
	}
	return strings.Join(lines, "\n")
}

// pgbouncerBackend returns the [databases] connection string of the
// PostgreSQL at serverURL (a TCP address, or the unix socket that the
// private cluster's URL names in its host parameter) and its user and
// password.
func pgbouncerBackend(serverURL string) (backend, userName, password string, err error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", "", "", fmt.Errorf("database url: %w", err)
	}
	userName = "postgres"
	if u.User != nil && u.User.Username() != "" {
		userName = u.User.Username()
	}
	if u.User != nil {
		password, _ = u.User.Password()
	}
	host, port := u.Hostname(), u.Port()
	if h := u.Query().Get("host"); strings.HasPrefix(h, "/") {
		host = h
		// pgdriver takes the socket file itself; pgbouncer its folder.
		if base := filepath.Base(h); strings.HasPrefix(base, ".s.PGSQL.") {
			host, port = filepath.Dir(h), strings.TrimPrefix(base, ".s.PGSQL.")
		}
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = "5432"
	}
	return fmt.Sprintf("host=%s port=%s", host, port), userName, password, nil
}

func quoteUserlist(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if over := t.b.Len() - t.max; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}

// TransactionPooled reports whether db reaches PostgreSQL through
// transaction pooling: whether one client connection's statements can run
// on a server backend that another client's transaction held in between.
// It reads the backend of one connection, then opens transactions on up to
// three more connections until one of them runs on that backend, and asks
// the first connection again. Behind transaction pooling the first of them
// does (PgBouncer hands out the server connection released last) and the
// first connection's next statement runs elsewhere; behind a direct
// connection or session pooling no other client ever gets that backend.
// The pool of db must allow four connections.
func TransactionPooled(ctx context.Context, db *bun.DB) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	first, err := db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer first.Close()
	backend := func(q bun.IDB) (int, error) {
		var pid int
		err := q.NewRaw("SELECT pg_backend_pid()").Scan(ctx, &pid)
		return pid, err
	}
	pid, err := backend(first)
	if err != nil {
		return false, err
	}
	for range 3 {
		c, err := db.Conn(ctx)
		if err != nil {
			return false, err
		}
		defer c.Close()
		tx, err := c.BeginTx(ctx, nil)
		if err != nil {
			return false, err
		}
		defer tx.Rollback() //nolint:errcheck
		other, err := backend(tx)
		if err != nil {
			return false, err
		}
		if other == pid {
			again, err := backend(first)
			if err != nil {
				return false, err
			}
			return again != pid, nil
		}
	}
	return false, nil
}
