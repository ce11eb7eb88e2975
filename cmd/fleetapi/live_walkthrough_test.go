package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// TestLiveWalkthroughRuns: the live data walkthrough of docs/live.md is
// the one `fleetapi dev` prints (for its own server), and, cut out of the
// page and run with bash (curl, date, grep) against `fleetapi dev`, it
// works: both readings are accepted, the overspeed notification of the
// second arrives on the stream the walkthrough opened before posting, and
// the list shows it, and GET /objects shows the reading as the truck's
// state. It runs twice on one database: each run fires the
// rule exactly once (the reading below the limit fires nothing and
// re-arms it).
func TestLiveWalkthroughRuns(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "date", "grep", "mktemp"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the walkthrough needs %s: %v", tool, err)
		}
	}
	script := liveWalkthroughOfDoc(t)
	if script != liveWalkthrough("127.0.0.1:8080") {
		t.Fatalf("docs/live.md holds another walkthrough than liveWalkthrough for dev's default address:\n%s", script)
	}
	db := storagetest.New(t)
	addr, printed := startDev(t, db, liveWalkthroughEnd)
	if !strings.Contains(printed, liveWalkthrough(addr)) {
		t.Fatalf("dev does not print the live walkthrough for its server:\n%s", printed)
	}
	script = liveWalkthrough(addr)

	const truck = "356938035643809"
	count := func() int {
		var n int
		if err := db.NewRaw("SELECT count(*) FROM notifications WHERE imei = ? AND type = 'overspeed'", truck).Scan(context.Background(), &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count() // the demo data's own
	for run := 1; run <= 2; run++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-c", script+"\nprintf '\\nRESULT %s\\n' \"$T\"\n")
		cmd.Dir = t.TempDir()
		b, err := cmd.CombinedOutput()
		cancel()
		got := string(b)
		if err != nil {
			t.Fatalf("run %d: bash: %v\n%s", run, err, got)
		}
		for _, bad := range []string{"curl:", "command not found", "syntax error", "No such file", `"success":false`} {
			if strings.Contains(got, bad) {
				t.Fatalf("run %d: a line failed (%q):\n%s", run, bad, got)
			}
		}
		m := regexp.MustCompile(`\nRESULT (\S+)\n`).FindStringSubmatch(got)
		if m == nil {
			t.Fatalf("run %d: the second reading's time was not captured:\n%s", run, got)
		}
		at := m[1]
		if n := strings.Count(got, `"accepted":1`); n != 2 {
			t.Fatalf("run %d: %d readings answers with \"accepted\":1, want 2:\n%s", run, n, got)
		}
		// On the stream: the event with the notification of the second reading.
		event := regexp.MustCompile(`(?m)^event: notification\ndata: (.*"time":"` + regexp.QuoteMeta(at) + `".*)$`).FindStringSubmatch(got)
		if event == nil {
			t.Fatalf("run %d: no notification event of the reading at %s on the stream:\n%s", run, at, got)
		}
		for _, s := range []string{`"type":"overspeed"`, `"imei":"` + truck + `"`} {
			if !strings.Contains(event[1], s) {
				t.Fatalf("run %d: the streamed notification lacks %s: %s", run, s, event[1])
			}
		}
		// In the list, newest first.
		list := regexp.MustCompile(`(?m)^\{"success":true,"data":\[\{.*"type":"overspeed".*$`).FindString(got)
		if !strings.Contains(list, `"time":"`+at+`"`) || !strings.Contains(list, `"imei":"`+truck+`"`) {
			t.Fatalf("run %d: the list does not start with the notification of %s:\n%s", run, at, got)
		}
		// The truck's current state is the newer reading (§14: GET /objects shows it).
		state := regexp.MustCompile(`(?m)^\{"success":true,"data":\[\{"id":[0-9]+,"imei":"` + truck + `".*$`).FindString(got)
		if !strings.Contains(state, `"last_time":"`+at+`"`) || !strings.Contains(state, `"speed":104`) {
			t.Fatalf("run %d: GET /objects does not show the reading at %s as Truck 7's state:\n%s", run, at, state)
		}
		// Exactly one notification a run: the reading below the limit fired nothing.
		if n := count() - before; n != run {
			t.Fatalf("run %d: %d new overspeed notifications of Truck 7, want %d", run, n, run)
		}
	}
}

// liveWalkthroughOfDoc is the live data walkthrough of docs/live.md, its
// frame included, with its final newline.
func liveWalkthroughOfDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/live.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, liveWalkthroughStart), strings.Index(doc, liveWalkthroughEnd)
	if i < 0 || j < i || strings.Count(doc, liveWalkthroughStart) != 1 || !strings.HasSuffix(doc[:i], "```bash\n") {
		t.Fatalf("docs/live.md holds no single live walkthrough opening a bash block (%q ... %q)", liveWalkthroughStart, liveWalkthroughEnd)
	}
	return doc[i:j+len(liveWalkthroughEnd)] + "\n"
}
