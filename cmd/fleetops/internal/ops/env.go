package ops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/procfs"
)

// env is the workplace of one run: the module root, a work folder holding
// the built binary and the replicas' logs, and the clean-ups to run at the
// end, last registered first.
type env struct {
	root     string
	work     string
	bin      string
	common   common
	out      io.Writer
	start    time.Time
	mu       sync.Mutex
	cleanups []func()
}

// newEnv finds the module root, makes the work folder and builds
// ./cmd/fleetapi into it.
func newEnv(ctx context.Context, name string, c common, out io.Writer) (*env, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "fleetapi-ops-"+name+"-")
	if err != nil {
		return nil, err
	}
	// A private cluster runs as the postgres user, which must traverse it.
	if err := os.Chmod(work, 0o755); err != nil {
		return nil, err
	}
	e := &env{root: root, work: work, bin: filepath.Join(work, "fleetapi"), common: c, out: out, start: time.Now()}
	e.onClose(func() {
		if c.keep {
			e.logf("work folder kept: %s", work)
			return
		}
		_ = os.RemoveAll(work)
	})
	e.logf("machine: %d cores, load average %s (other work on the machine skews the figures)", runtime.NumCPU(), procfs.ReadLoadAverage())
	e.logf("building ./cmd/fleetapi into %s", work)
	build := exec.CommandContext(ctx, "go", "build", "-o", e.bin, "./cmd/fleetapi")
	build.Dir = root
	if b, err := build.CombinedOutput(); err != nil {
		e.close()
		return nil, fmt.Errorf("go build ./cmd/fleetapi: %w\n%s", err, b)
	}
	return e, nil
}

// moduleRoot walks up from the working directory to fleetapi's go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(b, []byte("module github.com/fleetapi/fleetapi\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the fleetapi module (no go.mod of github.com/fleetapi/fleetapi above the working directory)")
		}
		dir = parent
	}
}

// onClose registers f to run when the run ends.
func (e *env) onClose(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cleanups = append(e.cleanups, f)
}

// close runs the clean-ups, last registered first.
func (e *env) close() {
	e.mu.Lock()
	fs := e.cleanups
	e.cleanups = nil
	e.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// logf prints a progress line with the time since the run started.
func (e *env) logf(format string, args ...any) {
	fmt.Fprintf(e.out, "[%6.1fs] %s\n", time.Since(e.start).Seconds(), fmt.Sprintf(format, args...))
}

// printf prints a result line as it is.
func (e *env) printf(format string, args ...any) {
	fmt.Fprintf(e.out, format, args...)
}
