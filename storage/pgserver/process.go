package pgserver

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// clusterDir is the layout of the folder of a server this package starts:
// its data directory, the folder of its unix socket (the only place it
// listens) and its log file.
type clusterDir struct {
	dir, pgdata, sock, logFile string
}

// newClusterDir makes dir absolute and creates it, traversable by the user
// that runs the server (postgres, when we are root), and its socket folder.
func newClusterDir(dir string) (clusterDir, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return clusterDir{}, err
	}
	d := clusterDir{dir: dir, pgdata: filepath.Join(dir, "data"), sock: filepath.Join(dir, "socket"), logFile: filepath.Join(dir, "postgres.log")}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return clusterDir{}, err
	}
	return d, os.MkdirAll(d.sock, 0o700)
}

// PostgresCredential returns the credential of the operating system's
// postgres user: the user that PostgreSQL's programs, and PgBouncer, run
// as when this process is root (they refuse to run as root).
func PostgresCredential() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, err
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// Signal sends sig to the postmaster of the cluster in dir (the folder
// given to StartPrivateCluster or StartStandby) and to the postmaster's
// children, found through /proc: SIGSTOP freezes the whole server (its
// connections stay open and nothing answers), SIGCONT resumes it.
func Signal(dir string, sig syscall.Signal) error {
	pids, err := postmasterPids(filepath.Join(dir, "data"))
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil {
			return fmt.Errorf("signal %d: %w", pid, err)
		}
	}
	return nil
}

// postmasterPids returns the pid of the postmaster of the data directory
// pgdata (from its postmaster.pid), then the pids of its children.
func postmasterPids(pgdata string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(pgdata, "postmaster.pid"))
	if err != nil {
		return nil, err
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pm, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return nil, fmt.Errorf("postmaster.pid: %w", err)
	}
	return append([]int{pm}, children(pm)...), nil
}

// children returns the pids of the processes whose parent is ppid.
func children(ppid int) []int {
	var out []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue // the process has gone
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after ")".
		_, rest, ok := strings.Cut(string(b), ") ")
		fields := strings.Fields(rest)
		if !ok || len(fields) < 2 || fields[1] != strconv.Itoa(ppid) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(st))); err == nil {
			out = append(out, pid)
		}
	}
	return out
}
