package pgserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrHANotInstalled is StartHACluster's error when a program it needs is
// not installed.
var ErrHANotInstalled = errors.New("the HA tools are not installed")

// HAOptions tune an HACluster (docs/design.md §13). The zero value is the
// project's tested setting: two nodes, synchronous replication, Patroni's
// timeouts of docs/operations.md (TTL 7 s, loop 1 s, retry 3 s; a
// crashed primary fails over at once: primary_start_timeout 0).
type HAOptions struct {
	// Nodes is the number of PostgreSQL nodes (2 when 0): one leader, the
	// others its standbys.
	Nodes int
	// Async turns Patroni's synchronous_mode off: commits are then
	// acknowledged before a standby has the WAL (the "before" of the
	// synchronous replication cost).
	Async bool
	// TTL, LoopWait and RetryTimeout are Patroni's leader-key TTL, HA loop
	// period and DCS/PostgreSQL retry timeout, in seconds (7, 1, 3 when
	// 0); Patroni requires LoopWait + 2*RetryTimeout <= TTL.
	TTL, LoopWait, RetryTimeout int
	// Archive turns on WAL archiving into a pgBackRest repository in the
	// cluster's folder (stanza "fleet"); see HACluster.Backup and Restore.
	Archive bool
	// Log receives progress lines; discarded when nil.
	Log io.Writer
}

// HACluster is a private PostgreSQL high-availability cluster of the
// tools docs/design.md §13 names, run from the Debian packages: a single-node
// etcd, one Patroni (with its PostgreSQL) per node, and HAProxy, whose
// primary port routes to the node whose Patroni answers 200 on /primary
// and whose replica port to those answering 200 on /replica. Everything
// listens on 127.0.0.1 on free ports and lives in one folder; Stop ends
// every process and removes the folder. A trusted job of the test helper
// and the operations tool: it kills, freezes and restarts nodes.
type HACluster struct {
	// Dir holds the cluster's files.
	Dir string
	// URL is the fleetapi database through HAProxy's primary port (the one
	// address fleetapi is configured with); ReplicaURL through its replica
	// port.
	URL, ReplicaURL string
	// PrimaryPort and ReplicaPort are HAProxy's ports.
	PrimaryPort, ReplicaPort int

	opts    HAOptions
	log     io.Writer
	bin     string
	runAs   *syscall.Credential
	scope   string
	etcd    *exec.Cmd
	haproxy *exec.Cmd
	nodes   []*haNode
	client  *http.Client
}

// haNode is one Patroni node.
type haNode struct {
	name            string
	dir             string
	pgPort, apiPort int
	cmd             *exec.Cmd
	exited          chan struct{}
}

// StartHACluster starts an HA cluster in a new folder under parent
// (os.TempDir() when empty), waits until it has a leader reachable through
// HAProxy with every standby streaming (and, with synchronous
// replication, one of them synchronous), and creates the fleetapi
// database. It fails when patroni, etcd, haproxy or PostgreSQL are not
// installed.
func StartHACluster(ctx context.Context, parent string, opts HAOptions) (_ *HACluster, err error) {
	if opts.Nodes <= 0 {
		opts.Nodes = 2
	}
	if opts.TTL == 0 {
		opts.TTL, opts.LoopWait, opts.RetryTimeout = 7, 1, 3
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	for _, prog := range []string{"patroni", "etcd", "haproxy", "pgbackrest"} {
		if _, err := lookPath(prog); err != nil {
			return nil, fmt.Errorf("%w: %s (Debian packages patroni, etcd-server, haproxy, pgbackrest)", ErrHANotInstalled, prog)
		}
	}
	bin, err := pgBinDir()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHANotInstalled, err)
	}
	RemoveAbandonedHAClusters(parent)
	if parent == "" {
		parent = os.TempDir()
	}
	dir, err := os.MkdirTemp(parent, "fleetapi-ha-")
	if err != nil {
		return nil, err
	}
	c := &HACluster{Dir: dir, opts: opts, log: opts.Log, bin: bin, scope: filepath.Base(dir),
		client: &http.Client{Timeout: time.Second}}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		if c.runAs, err = postgresCredential(); err != nil {
			return nil, err
		}
	}
	ports, err := freePorts(4 + 2*opts.Nodes)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer := ports[0], ports[1]
	c.PrimaryPort, c.ReplicaPort = ports[2], ports[3]
	for i := range opts.Nodes {
		c.nodes = append(c.nodes, &haNode{name: fmt.Sprintf("node%d", i), dir: filepath.Join(dir, fmt.Sprintf("node%d", i)),
			pgPort: ports[4+2*i], apiPort: ports[5+2*i]})
	}
	if err := c.startEtcd(ctx, etcdClient, etcdPeer); err != nil {
		return nil, err
	}
	if opts.Archive {
		if err := c.writeBackRestConfigs(); err != nil {
			return nil, err
		}
	}
	for i, n := range c.nodes {
		if err := os.MkdirAll(n.dir, 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(n.dir, "patroni.yml"), []byte(c.patroniConfig(n, etcdClient)), 0o600); err != nil {
			return nil, err
		}
		if err := c.chown(n.dir); err != nil {
			return nil, err
		}
		if err := c.startNode(i); err != nil {
			return nil, err
		}
		if i == 0 {
			// The first node bootstraps the cluster; the others then clone it.
			if _, err := c.WaitLeader(ctx, 60*time.Second); err != nil {
				return nil, err
			}
		}
	}
	if err := c.startHAProxy(); err != nil {
		return nil, err
	}
	if err := c.WaitHealthy(ctx, 90*time.Second); err != nil {
		return nil, err
	}
	q := url.Values{"sslmode": {"disable"}}
	c.URL = (&url.URL{Scheme: "postgres", User: url.User("postgres"), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(c.PrimaryPort)),
		Path: "/fleetapi", RawQuery: q.Encode()}).String()
	c.ReplicaURL = (&url.URL{Scheme: "postgres", User: url.User("postgres"), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(c.ReplicaPort)),
		Path: "/fleetapi", RawQuery: q.Encode()}).String()
	if opts.Archive {
		if err := c.backRest(ctx, "stanza-create"); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Nodes returns the number of nodes.
func (c *HACluster) Nodes() int { return len(c.nodes) }

// NodeURL is the fleetapi database on node i directly (not through
// HAProxy).
func (c *HACluster) NodeURL(i int) string {
	return (&url.URL{Scheme: "postgres", User: url.User("postgres"),
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(c.nodes[i].pgPort)), Path: "/fleetapi",
		RawQuery: "sslmode=disable"}).String()
}

// patroniConfig is node n's patroni.yml.
func (c *HACluster) patroniConfig(n *haNode, etcdPort int) string {
	sync := "true"
	if c.opts.Async {
		sync = "false"
	}
	archive := ""
	if c.opts.Archive {
		archive = fmt.Sprintf(`    archive_command: 'pgbackrest --config=%s --stanza=fleet archive-push %%p'
`, filepath.Join(n.dir, "pgbackrest.conf"))
	}
	archiveMode := "off"
	if c.opts.Archive {
		archiveMode = "on"
	}
	// fsync is off like the other private clusters of the tests: a
	// process killed with SIGKILL loses nothing the kernel holds; what is
	// measured is replication, not the disk.
	return fmt.Sprintf(`scope: %[1]s
name: %[2]s
log:
  level: WARNING
  dir: %[3]s
restapi:
  listen: 127.0.0.1:%[4]d
  connect_address: 127.0.0.1:%[4]d
etcd3:
  hosts: 127.0.0.1:%[5]d
bootstrap:
  dcs:
    ttl: %[6]d
    loop_wait: %[7]d
    retry_timeout: %[8]d
    primary_start_timeout: 0
    maximum_lag_on_failover: 1048576
    synchronous_mode: %[9]s
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_level: replica
        hot_standby: 'on'
        wal_log_hints: 'on'
        max_wal_senders: 10
        max_replication_slots: 10
        max_connections: 100
        fsync: 'off'
        full_page_writes: 'on'
        archive_mode: '%[13]s'
        archive_timeout: 60
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
postgresql:
  listen: 127.0.0.1:%[10]d
  connect_address: 127.0.0.1:%[10]d
  data_dir: %[11]s
  bin_dir: %[12]s
  pgpass: %[3]s/pgpass
  authentication:
    superuser:
      username: postgres
    replication:
      username: postgres
    rewind:
      username: postgres
  parameters:
    unix_socket_directories: '%[3]s'
%[14]s  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
`, c.scope, n.name, n.dir, n.apiPort, etcdPort, c.opts.TTL, c.opts.LoopWait, c.opts.RetryTimeout, sync,
		n.pgPort, filepath.Join(n.dir, "data"), c.bin, archiveMode, archive)
}

// startEtcd starts the single-node etcd.
func (c *HACluster) startEtcd(ctx context.Context, client, peer int) error {
	cu := fmt.Sprintf("http://127.0.0.1:%d", client)
	pu := fmt.Sprintf("http://127.0.0.1:%d", peer)
	bin, _ := lookPath("etcd")
	cmd := exec.Command(bin, "--name", "etcd0", "--data-dir", filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls", cu, "--advertise-client-urls", cu,
		"--listen-peer-urls", pu, "--initial-advertise-peer-urls", pu,
		"--initial-cluster", "etcd0="+pu, "--initial-cluster-state", "new",
		"--initial-cluster-token", c.scope, "--log-level", "error")
	if err := c.spawn(cmd, "etcd", nil); err != nil {
		return err
	}
	c.etcd = cmd
	return waitFor(ctx, 30*time.Second, "etcd", func() bool {
		resp, err := c.client.Get(cu + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// startNode starts node i's Patroni (again), as the postgres user when we
// are root.
func (c *HACluster) startNode(i int) error {
	n := c.nodes[i]
	bin, _ := lookPath("patroni")
	cmd := exec.Command(bin, filepath.Join(n.dir, "patroni.yml"))
	cmd.Dir = n.dir
	cmd.Env = append(os.Environ(), "HOME="+n.dir)
	if err := c.spawn(cmd, n.name, c.runAs); err != nil {
		return err
	}
	n.cmd = cmd
	n.exited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(cmd, n.exited)
	fmt.Fprintf(c.log, "ha: %s started (postgres port %d, REST port %d)\n", n.name, n.pgPort, n.apiPort)
	return nil
}

// startHAProxy starts HAProxy with the primary and replica ports
// (HAProxyConfig).
func (c *HACluster) startHAProxy() error {
	var servers []HAProxyServer
	for _, n := range c.nodes {
		servers = append(servers, HAProxyServer{Name: n.name, Addr: fmt.Sprintf("127.0.0.1:%d", n.pgPort), CheckPort: n.apiPort})
	}
	cfg := filepath.Join(c.Dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(HAProxyConfig("127.0.0.1", c.PrimaryPort, c.ReplicaPort, servers)), 0o644); err != nil {
		return err
	}
	bin, _ := lookPath("haproxy")
	cmd := exec.Command(bin, "-f", cfg, "-db")
	if err := c.spawn(cmd, "haproxy", nil); err != nil {
		return err
	}
	c.haproxy = cmd
	return nil
}

// spawn starts cmd with its output in the cluster's folder, in a process
// group of its own, killed when this process dies.
func (c *HACluster) spawn(cmd *exec.Cmd, name string, cred *syscall.Credential) error {
	f, err := os.OpenFile(filepath.Join(c.Dir, name+".out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	return os.WriteFile(filepath.Join(c.Dir, name+".pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
}

// Role is a node's role as its Patroni reports it: "primary", "replica",
// or "" when its REST API does not answer.
func (c *HACluster) Role(i int) string {
	n := c.nodes[i]
	for _, r := range []string{"primary", "replica"} {
		resp, err := c.client.Get(fmt.Sprintf("http://127.0.0.1:%d/%s", n.apiPort, r))
		if err != nil {
			return ""
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return r
		}
	}
	return ""
}

// Leader returns the node that answers 200 on /primary, or -1.
func (c *HACluster) Leader() int {
	for i := range c.nodes {
		if c.Role(i) == "primary" {
			return i
		}
	}
	return -1
}

// DCSLeader is the leader node in node i's view of the DCS (Patroni's
// /cluster: who holds the leader key), or -1 when there is none or node
// i's REST API does not answer.
func (c *HACluster) DCSLeader(i int) int {
	resp, err := c.client.Get(fmt.Sprintf("http://127.0.0.1:%d/cluster", c.nodes[i].apiPort))
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var cl struct {
		Members []struct{ Name, Role string }
	}
	if json.NewDecoder(resp.Body).Decode(&cl) != nil {
		return -1
	}
	for _, m := range cl.Members {
		if m.Role == "leader" {
			for j, n := range c.nodes {
				if n.name == m.Name {
					return j
				}
			}
		}
	}
	return -1
}

// WaitLeader waits up to d for a leader and returns it.
func (c *HACluster) WaitLeader(ctx context.Context, d time.Duration) (int, error) {
	leader := -1
	err := waitFor(ctx, d, "a Patroni leader", func() bool {
		leader = c.Leader()
		return leader >= 0
	})
	return leader, err
}

// WaitHealthy waits up to d until there is a leader, every running node
// other than it is a streaming replica, and (with synchronous replication
// and a standby running) one standby is synchronous.
func (c *HACluster) WaitHealthy(ctx context.Context, d time.Duration) error {
	return waitFor(ctx, d, "a healthy cluster (leader, streaming standbys, a synchronous standby)", func() bool {
		leader := -1
		running := 0
		for i, n := range c.nodes {
			if n.cmd == nil {
				continue
			}
			running++
			switch c.Role(i) {
			case "primary":
				leader = i
			case "replica":
			default:
				return false
			}
		}
		if leader < 0 {
			return false
		}
		want := running - 1
		got, sync := c.streaming(ctx, leader)
		return got >= want && (c.opts.Async || want == 0 || sync)
	})
}

// streaming returns the number of standbys streaming from node i and
// whether one of them is synchronous.
func (c *HACluster) streaming(ctx context.Context, i int) (int, bool) {
	out, err := c.psql(ctx, i, "SELECT count(*) || ' ' || count(*) FILTER (WHERE sync_state = 'sync') FROM pg_stat_replication WHERE state = 'streaming'")
	if err != nil {
		return 0, false
	}
	var n, s int
	if _, err := fmt.Sscan(out, &n, &s); err != nil {
		return 0, false
	}
	return n, s > 0
}

// psql runs one statement on node i's postgres database and returns its
// unaligned output.
func (c *HACluster) psql(ctx context.Context, i int, stmt string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, "psql"), "-X", "-A", "-t", "-h", "127.0.0.1",
		"-p", strconv.Itoa(c.nodes[i].pgPort), "-U", "postgres", "-d", "postgres", "-c", stmt)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("psql: %w: %s", err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// Kill kills node i as a machine dies: SIGKILL to its Patroni and to its
// PostgreSQL's postmaster and every backend, at once.
func (c *HACluster) Kill(i int) error {
	n := c.nodes[i]
	if n.cmd == nil {
		return fmt.Errorf("%s is not running", n.name)
	}
	if err := c.signalNode(i, syscall.SIGKILL); err != nil {
		return err
	}
	<-n.exited
	n.cmd = nil
	return nil
}

// KillPostgres kills only node i's PostgreSQL (SIGKILL to its postmaster
// and every backend), leaving its Patroni running: Patroni finds it gone at
// its next loop and, primary_start_timeout being 0, releases the leader key
// for the synchronous standby to take (it restarts the crashed server
// itself only when no standby can take over).
func (c *HACluster) KillPostgres(i int) error {
	pids := postgresPids(filepath.Join(c.nodes[i].dir, "data"))
	if len(pids) == 0 {
		return fmt.Errorf("%s: PostgreSQL is not running", c.nodes[i].name)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("signal %d: %w", pid, err)
		}
	}
	return nil
}

// Freeze stops node i's Patroni and PostgreSQL processes with SIGSTOP: a
// machine that hangs (its connections stay open, nothing answers) until
// Thaw.
func (c *HACluster) Freeze(i int) error { return c.signalNode(i, syscall.SIGSTOP) }

// Thaw resumes a frozen node (SIGCONT); its Patroni then finds that
// another node holds the leader key and demotes its PostgreSQL.
func (c *HACluster) Thaw(i int) error { return c.signalNode(i, syscall.SIGCONT) }

// Restart starts the Patroni of a killed node again: it rejoins as a
// standby of the current leader (pg_rewind when its timeline diverged).
func (c *HACluster) Restart(i int) error {
	if c.nodes[i].cmd != nil {
		return fmt.Errorf("%s is running", c.nodes[i].name)
	}
	return c.startNode(i)
}

// signalNode sends sig to node i's Patroni and to its PostgreSQL's
// processes.
func (c *HACluster) signalNode(i int, sig syscall.Signal) error {
	n := c.nodes[i]
	pids := []int{}
	if n.cmd != nil {
		pids = append(pids, n.cmd.Process.Pid)
	}
	pids = append(pids, postgresPids(filepath.Join(n.dir, "data"))...)
	if len(pids) == 0 {
		return fmt.Errorf("%s has no process", n.name)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("signal %d: %w", pid, err)
		}
	}
	return nil
}

// postgresPids returns the postmaster of the cluster in pgdata and its
// children, or nothing when it does not run.
func postgresPids(pgdata string) []int {
	pids, err := postmasterPids(pgdata)
	if err != nil || syscall.Kill(pids[0], 0) != nil {
		return nil
	}
	return pids
}

// Stop ends every process of the cluster (thawing frozen ones first) and
// removes its folder.
func (c *HACluster) Stop() {
	for i, n := range c.nodes {
		_ = c.signalNode(i, syscall.SIGCONT)
		if n.cmd != nil {
			_ = syscall.Kill(n.cmd.Process.Pid, syscall.SIGKILL)
			<-n.exited
			n.cmd = nil
		}
		for _, pid := range postgresPids(filepath.Join(n.dir, "data")) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	for _, cmd := range []*exec.Cmd{c.haproxy, c.etcd} {
		if cmd != nil && cmd.Process != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	// Backends may take a moment to go after their postmaster.
	for _, n := range c.nodes {
		for range 50 {
			if len(postgresPids(filepath.Join(n.dir, "data"))) == 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	_ = os.RemoveAll(c.Dir)
}

// RemoveAbandonedHAClusters kills the processes of HA clusters under
// parent (os.TempDir() when empty) whose owning process is gone (a test
// binary killed before its clean-up ran) and removes their folders.
func RemoveAbandonedHAClusters(parent string) {
	if parent == "" {
		parent = os.TempDir()
	}
	dirs, _ := filepath.Glob(filepath.Join(parent, "fleetapi-ha-*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "owner.pid"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(string(b))
		if err != nil || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		pidFiles, _ := filepath.Glob(filepath.Join(dir, "*.pid"))
		for _, f := range pidFiles {
			if filepath.Base(f) == "owner.pid" {
				continue
			}
			if b, err := os.ReadFile(f); err == nil {
				if p, err := strconv.Atoi(string(b)); err == nil && ownedBy(p, dir) {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			}
		}
		nodes, _ := filepath.Glob(filepath.Join(dir, "node*", "data"))
		for _, d := range nodes {
			for _, p := range postgresPids(d) {
				_ = syscall.Kill(p, syscall.SIGCONT)
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
		}
		_ = os.RemoveAll(dir)
	}
}

// ownedBy reports whether process pid's command line names dir (a pid
// file's process, not another that reused the number).
func ownedBy(pid int, dir string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(b), dir)
}

// waitFor polls ok every 100 ms until it is true, d passes or ctx ends.
func waitFor(ctx context.Context, d time.Duration, what string, ok func() bool) error {
	deadline := time.Now().Add(d)
	for {
		if ok() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no %s within %s", what, d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// lookPath finds prog on PATH or in /usr/sbin (haproxy's folder, not on
// every PATH).
func lookPath(prog string) (string, error) {
	if p, err := exec.LookPath(prog); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/usr/bin"} {
		p := filepath.Join(d, prog)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// postgresCredential is the postgres user's, to run Patroni (and so
// PostgreSQL, which refuses root) as.
func postgresCredential() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New("running as root and there is no postgres user to run Patroni as")
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// chown hands dir to the user that runs the nodes.
func (c *HACluster) chown(dir string) error {
	if c.runAs == nil {
		return nil
	}
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(c.runAs.Uid), int(c.runAs.Gid))
	})
}
