package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// policyModuleFiles are the .rego files of a copy of the embedded set.
func policyModuleFiles(t testing.TB, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".rego") {
			files = append(files, p)
		}
		return err
	})
	if err != nil || len(files) < 4 {
		t.Fatalf("rego files of %s: %v %v", dir, files, err)
	}
	slices.Sort(files)
	return files
}

// TestSlowCopyNeverLoadsAMixedSet (issue 19 item 12): a deployment copies
// the files of a new set one by one, with pauses shorter than DirSettle,
// back and forth between two sets, while SIGHUP reloads fire back to back
// and the watcher polls. Every revision ever loaded is one of the two
// whole sets, never a mixture, and the last copy is in force at the end.
func TestSlowCopyNeverLoadsAMixedSet(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := copyPolicy(t)
	files := policyModuleFiles(t, dir)
	setA := map[string][]byte{}
	setB := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		setA[f] = b
		setB[f] = append(slices.Clone(b), fmt.Sprintf("\n# revision B of %s\n", filepath.Base(f))...)
	}
	// The revisions of the two whole sets.
	dirB := copyPolicy(t)
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f)
		writeFileAtomic(t, filepath.Join(dirB, rel), setB[f])
	}
	revB := newEngine(t, Options{Dir: dirB, DirSettle: -1}).Revision()

	var logs syncBuffer
	const settle = 400 * time.Millisecond
	const pause = settle / 4
	e := newEngine(t, Options{Dir: dir, DirSettle: settle, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	revA := e.Revision()
	if revA == revB {
		t.Fatal("the two sets have one revision")
	}
	whole := map[string]string{revA: "A", revB: "B"}

	var wg sync.WaitGroup
	wg.Go(func() { e.Watch(ctx, 10*time.Millisecond) })
	var reloads, refused int
	wg.Go(func() {
		for ctx.Err() == nil {
			if _, err := e.Reload(ctx, "SIGHUP"); err != nil && ctx.Err() == nil {
				refused++
			}
			reloads++
		}
	})
	copySet := func(set map[string][]byte) {
		for _, f := range files {
			writeFileAtomic(t, f, set[f])
			time.Sleep(pause)
		}
	}
	for _, round := range []struct {
		set  map[string][]byte
		want string
	}{{setB, revB}, {setA, revA}, {setB, revB}} {
		copySet(round.set)
		waitFor(t, "the copied set to be in force", func() bool { return e.Revision() == round.want }, &logs)
	}
	cancel()
	wg.Wait()

	loaded := 0
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec struct {
			Msg      string `json:"msg"`
			Trigger  string `json:"trigger"`
			Revision string `json:"policy_revision"`
		}
		if line == "" || json.Unmarshal([]byte(line), &rec) != nil || rec.Msg != "policy reloaded" {
			continue
		}
		loaded++
		if whole[rec.Revision] == "" {
			t.Errorf("%s loaded a mixed set: revision %s is neither A (%s) nor B (%s)", rec.Trigger, rec.Revision, revA, revB)
		}
	}
	if loaded < 3 {
		t.Errorf("%d sets loaded, want at least the 3 copies; log:\n%s", loaded, logs.String())
	}
	if refused != 0 {
		t.Errorf("%d reloads refused during the copies; log:\n%s", refused, logs.String())
	}
	t.Logf("%d SIGHUP reloads, %d sets loaded", reloads, loaded)
}

// TestStartDuringSlowCopy (issue 19 item 12, the start trigger): an engine
// started while a set is being copied file by file loads the whole copied
// set, never the mixture the directory holds when it starts.
func TestStartDuringSlowCopy(t *testing.T) {
	dir := copyPolicy(t)
	files := policyModuleFiles(t, dir)
	setB := map[string][]byte{}
	dirB := copyPolicy(t)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		setB[f] = append(b, fmt.Sprintf("\n# revision B of %s\n", filepath.Base(f))...)
		rel, _ := filepath.Rel(dir, f)
		writeFileAtomic(t, filepath.Join(dirB, rel), setB[f])
	}
	revB := newEngine(t, Options{Dir: dirB, DirSettle: -1}).Revision()
	const settle = 400 * time.Millisecond
	writeFileAtomic(t, files[0], setB[files[0]]) // the copy has begun
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		for _, f := range files[1:] {
			time.Sleep(settle / 4)
			tmp := filepath.Join(filepath.Dir(f), ".tmp-"+filepath.Base(f))
			if err := os.WriteFile(tmp, setB[f], 0o644); err != nil {
				t.Error(err)
			} else if err := os.Rename(tmp, f); err != nil {
				t.Error(err)
			}
		}
	}()
	e := newEngine(t, Options{Dir: dir, DirSettle: settle})
	<-copied
	if e.Revision() != revB {
		t.Errorf("started during the copy with revision %s, want the copied set's %s", e.Revision(), revB)
	}
}
