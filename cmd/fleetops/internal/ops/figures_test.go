package ops

import (
	"bytes"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/stats"
)

// TestTokenBudget pins the bound every rate-limit check compares with,
// against the figures docs/operations.md records.
func TestTokenBudget(t *testing.T) {
	for _, tc := range []struct {
		limit int
		d     time.Duration
		want  int
	}{
		{120, 15 * time.Second, 150},
		{120, 15010 * time.Millisecond, 151}, // shared limit: 120 + 120/min × 15.01 s
		{600, 20050 * time.Millisecond, 801}, // the limiter demonstration
		{120, 9800 * time.Millisecond, 140},  // Redis up
		{120, 10300 * time.Millisecond, 141}, // Redis down, per replica
		{120, 0, 120},                        // the burst alone
		{60, time.Second, 61},
		{60, 1001 * time.Millisecond, 62}, // a started refill counts (rounded up)
		{0, time.Minute, 0},
	} {
		if got := tokenBudget(tc.limit, tc.d); got != tc.want {
			t.Errorf("tokenBudget(%d, %s) = %d, want %d", tc.limit, tc.d, got, tc.want)
		}
	}
}

func TestRedisOutageBounds(t *testing.T) {
	// docs/operations.md: 140, 2 × 141 = 282, and 154 for a fresh budget
	// over 11.9 s plus 2 s of local refill on each of two replicas.
	got := redisOutageBounds(120, [3]time.Duration{9800 * time.Millisecond, 10300 * time.Millisecond, 11900 * time.Millisecond}, 250*time.Millisecond)
	if got != [3]int{140, 282, 154} {
		t.Errorf("redisOutageBounds = %v, want [140 282 154]", got)
	}
}

func TestAuthFailBudget(t *testing.T) {
	for _, tc := range []struct {
		d                   time.Duration
		clients             int
		budget, worstBeyond int
	}{
		{15 * time.Second, 16, 75, 16 * 16},
		{15 * time.Second, 1, 75, 16},
		{1400 * time.Millisecond, 4, 61, 4 * 2},
		{1500 * time.Millisecond, 4, 62, 4 * 3}, // half a second rounds up
		{0, 8, 60, 8},
	} {
		budget, worst := authFailBudget(tc.d, tc.clients)
		if budget != tc.budget || worst-budget != tc.worstBeyond {
			t.Errorf("authFailBudget(%s, %d) = %d, %d; want %d, %d", tc.d, tc.clients, budget, worst, tc.budget, tc.budget+tc.worstBeyond)
		}
	}
}

// TestLimiterTally: the limiter demonstration's verdicts for each kind of
// answer: 200s within and beyond the budget, 429 with and without
// Retry-After, other statuses and transport errors.
func TestLimiterTally(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	answer := func(status int, retryAfter string) result {
		r := result{Outcome: stats.Outcome{Status: status}, header: http.Header{}}
		if retryAfter != "" {
			r.header.Set("Retry-After", retryAfter)
		}
		return r
	}
	run := func(add func(t *limiterTally)) (*limiterTally, string) {
		tally := &limiterTally{start: start}
		add(tally)
		var out bytes.Buffer
		c := &checks{e: &env{out: &out, start: time.Now()}}
		tally.check(c, 10, 6*time.Second) // budget 10 + 1 = 11
		return tally, out.String()
	}
	many := func(t *limiterTally, n, status int, retryAfter string, at time.Duration) {
		for range n {
			t.add(answer(status, retryAfter), start.Add(at))
		}
	}
	tally, out := run(func(t *limiterTally) {
		many(t, 10, 200, "", time.Second)
		many(t, 5, 429, "1", 2*time.Second)
		many(t, 1, 200, "", 3*time.Second)
	})
	if strings.Contains(out, "FAIL") || tally.firstLimitedAt != 2*time.Second || tally.okAfterExhausted != 1 {
		t.Errorf("within the budget: %+v\n%s", tally, out)
	}
	for name, add := range map[string]func(t *limiterTally){
		"beyond the budget": func(t *limiterTally) { many(t, 12, 200, "", 0); many(t, 1, 429, "1", 0) },
		"burst not usable":  func(t *limiterTally) { many(t, 9, 200, "", 0); many(t, 1, 429, "1", 0) },
		"never limited":     func(t *limiterTally) { many(t, 11, 200, "", 0) },
		"no Retry-After":    func(t *limiterTally) { many(t, 10, 200, "", 0); many(t, 1, 429, "", 0) },
		"another status":    func(t *limiterTally) { many(t, 10, 200, "", 0); many(t, 1, 429, "1", 0); many(t, 1, 500, "", 0) },
		"a transport error": func(t *limiterTally) {
			many(t, 10, 200, "", 0)
			many(t, 1, 429, "1", 0)
			t.add(result{Outcome: stats.Outcome{Err: errors.New("reset"), Status: 200}}, start)
		},
	} {
		if _, out := run(add); !strings.Contains(out, "FAIL") {
			t.Errorf("%s: no FAIL\n%s", name, out)
		}
	}
}

// TestMixPick: the mix honours its weights over any long run of request
// numbers, with no shared random source.
func TestMixPick(t *testing.T) {
	toks := map[string]token{"admin": {1, "a"}, "manager": {2, "m"}, "user": {3, "u"}, "subaccount": {4, "s"}}
	m := loadMix(toks, "run1")
	if m.total != 100 {
		t.Fatalf("weights add up to %d", m.total)
	}
	for _, from := range []int64{1, 1_000_003} {
		counts := map[string]int{}
		const n = 100_000
		for seq := from; seq < from+n; seq++ {
			counts[m.pick(seq).name]++
		}
		for _, e := range m.entries {
			share := float64(counts[e.name]) / n * 100
			if share < float64(e.weight)-1 || share > float64(e.weight)+1 {
				t.Errorf("from %d: %s got %.1f%%, weight %d%%", from, e.name, share, e.weight)
			}
		}
	}
	if got := m.weights(); !strings.HasPrefix(got, "GET /me 10%, GET /services 15%") || !strings.HasSuffix(got, "POST /passengers 15%") {
		t.Errorf("weights() = %q", got)
	}
}

// TestLoadMixRequests: each endpoint builds a request of its route with a
// token; the subaccount never reads events (403); every create has its
// own Idempotency-Key.
func TestLoadMixRequests(t *testing.T) {
	toks := map[string]token{"admin": {1, "a"}, "manager": {2, "m"}, "user": {3, "u"}, "subaccount": {4, "s"}}
	m := loadMix(toks, "run1")
	keys := map[string]bool{}
	for _, e := range m.entries {
		for seq := range int64(40) {
			k := e.build(seq)
			if k.token == "" || !strings.HasPrefix(k.path, "/api/v2/") {
				t.Fatalf("%s #%d: %+v", e.name, seq, k)
			}
			if strings.HasPrefix(k.path, "/api/v2/events") && k.token == "s" {
				t.Errorf("%s #%d: the subaccount reads events", e.name, seq)
			}
			if k.method == http.MethodPost {
				key := k.header.Get("Idempotency-Key")
				if key == "" || keys[key] || !bytes.Contains(k.body, []byte(key)) {
					t.Errorf("%s #%d: key %q (seen %v)", e.name, seq, key, keys[key])
				}
				keys[key] = true
			}
		}
	}
}

// TestTallyRows enumerates what the outage run can find in the database
// for a key: one row (the right passenger or another), none, several,
// rows of keys it never sent, and keys that were never created.
func TestTallyRows(t *testing.T) {
	keys := map[string]*keyState{
		"ok":        {created: true, createdOnTry: 1, id: 10},
		"retried":   {created: true, createdOnTry: 3, id: 11},
		"other-id":  {created: true, createdOnTry: 1, id: 12},
		"missing":   {created: true, createdOnTry: 2, id: 13},
		"twice":     {created: true, createdOnTry: 1, id: 14},
		"abandoned": {},
	}
	rows := map[string]storedRows{
		"ok": {1, 10}, "retried": {1, 11}, "other-id": {1, 99}, "twice": {2, 14}, "stray": {1, 50},
	}
	got := tallyRows(keys, rows)
	want := rowTally{once: 3, wrongID: 1, missing: 1, dup: 1, strays: 1}
	if got != want {
		t.Errorf("tallyRows = %+v, want %+v", got, want)
	}
	if got.exactlyOnce(len(keys)) {
		t.Error("exactlyOnce with faults")
	}
	clean := map[string]*keyState{"a": {created: true, id: 1}, "b": {created: true, id: 2}}
	if t2 := tallyRows(clean, map[string]storedRows{"a": {1, 1}, "b": {1, 2}}); !t2.exactlyOnce(2) || t2.wrongID != 0 {
		t.Errorf("clean: %+v", t2)
	}
	created, retried, abandoned := splitKeys(keys)
	if strings.Join(created, ",") != "missing,ok,other-id,retried,twice" || strings.Join(retried, ",") != "missing,retried" ||
		strings.Join(abandoned, ",") != "abandoned" {
		t.Errorf("splitKeys: %v %v %v", created, retried, abandoned)
	}
}

// TestParseSample reads Prometheus text lines: labels with escapes, no
// labels, and lines that are not samples.
func TestParseSample(t *testing.T) {
	s, ok := parseSample(`go_sql_query_timing_milliseconds_count{db_system="postgresql",table="a\"b",op="SELECT"} 42`)
	if !ok || s.name != "go_sql_query_timing_milliseconds_count" || s.value != 42 || s.labels["table"] != `a"b` || s.labels["op"] != "SELECT" {
		t.Errorf("%+v %v", s, ok)
	}
	s, ok = parseSample(`process_open_fds 17 1700000000000`)
	if !ok || s.name != "process_open_fds" || s.value != 17 || len(s.labels) != 0 {
		t.Errorf("%+v %v", s, ok)
	}
	for _, bad := range []string{"name_only", `x{a="1"} notanumber`, `x{a=1} 3`, `x}{ 3`} {
		if s, ok := parseSample(bad); ok {
			t.Errorf("%q: %+v", bad, s)
		}
	}
	samples := []sample{
		{"q_count", map[string]string{"op": "SELECT"}, 3},
		{"q_count", map[string]string{"op": "INSERT"}, 2},
		{"other", map[string]string{"op": "SELECT"}, 100},
	}
	if got := sumOf(samples, "q_count", nil); got != 5 {
		t.Errorf("sumOf all = %v", got)
	}
	if got := sumOf(samples, "q_count", map[string]string{"op": "SELECT"}); got != 3 {
		t.Errorf("sumOf SELECT = %v", got)
	}
}

// TestRandomToken: the flood's tokens are well-formed (so that only the
// lookup can refuse them) and differ.
func TestRandomToken(t *testing.T) {
	format := regexp.MustCompile(`^flt_[0-9A-Za-z]{32}$`)
	seen := map[string]bool{}
	for range 100 {
		tok := randomToken()
		if !format.MatchString(tok) || seen[tok] {
			t.Fatalf("%q (seen %v)", tok, seen[tok])
		}
		seen[tok] = true
	}
	for _, k := range append(badTokenKinds(), malformedKinds("flt_valid")...) {
		if len(k.want) == 0 || k.build().path == "" {
			t.Errorf("kind %q: want %v", k.name, k.want)
		}
	}
}

func TestSlowSpan(t *testing.T) {
	r := slowResult{headers: []time.Duration{5 * time.Second, 3 * time.Second}}
	if h := r.headersHeld(); h != (span{2, 3 * time.Second, 5 * time.Second}) {
		t.Errorf("headers %+v", h)
	}
	if b := r.bodiesHeld(); b != (span{}) {
		t.Errorf("no bodies: %+v", b)
	}
}

// TestReadRouting pins the standby run's routing arithmetic against the
// figures docs/operations.md records: the reads of a phase are the
// difference of the counters scraped at its ends, and the replica's share
// is of the reads routed in the phase.
func TestReadRouting(t *testing.T) {
	start := readRouting{primary: 0, replica: 0, retries: 0}
	end := readRouting{primary: 0, replica: 4524, retries: 0}
	if d := end.sub(start); d != (readRouting{0, 4524, 0}) || d.replicaShare() != 1 {
		t.Errorf("all up: %+v share %v", d, d.replicaShare())
	}
	next := readRouting{primary: 5266, replica: 4535, retries: 7}
	d := next.sub(end)
	if d != (readRouting{5266, 11, 7}) {
		t.Errorf("standby stopped: %+v", d)
	}
	if share := d.replicaShare(); share < 0.00208 || share > 0.00209 {
		t.Errorf("standby stopped: share %v, want 11/5277", share)
	}
	if (readRouting{}).replicaShare() != 0 {
		t.Error("no reads: share is not 0")
	}
}
