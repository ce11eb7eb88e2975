package policy

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// keyStrings are the strings the key test draws from: empty, separators
// of every kind a textual key could use, bytes that look like the
// encoding's own lengths and varints, and strings that are the
// concatenation of others.
var keyStrings = []string{
	"", "a", "b", "ab", "a\x00b", "\x00", "\x01", "\x02", "\x01a", "a\x01",
	"\x7f", "\x80", "\xff", "\x80\x01", ",", `"`, `","`, ":", "|", "/", "\n",
	"GET", "GET /events", "/events/{id}", "user", "admin", "subaccount",
}

// keyInts are the numbers the key test draws from, varint edges included.
var keyInts = []int64{0, 1, -1, 63, 64, -64, -65, 127, 128, 255, 1 << 20, math.MaxInt64, math.MinInt64}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func randomStrings(r *rand.Rand) []string {
	switch r.IntN(4) {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	ss := make([]string, r.IntN(4))
	for i := range ss {
		ss[i] = pick(r, keyStrings)
	}
	return ss
}

func randomInput(r *rand.Rand) Input {
	in := Input{
		Request: RequestInput{Method: pick(r, keyStrings), Route: pick(r, keyStrings)},
		Token:   TokenInput{ID: pick(r, keyInts), Permissions: randomStrings(r)},
		Account: AccountInput{
			ID: pick(r, keyInts), Type: pick(r, keyStrings), ManagerID: pick(r, keyInts),
			Active: r.IntN(2) == 0, Expired: r.IntN(2) == 0, ReadOnly: r.IntN(2) == 0,
			Privileges: randomStrings(r), ChainComplete: r.IntN(2) == 0,
		},
	}
	for range r.IntN(3) {
		in.Account.Chain = append(in.Account.Chain, AncestorInput{
			ID: pick(r, keyInts), Type: pick(r, keyStrings),
			Active: r.IntN(2) == 0, Expired: r.IntN(2) == 0, ReadOnly: r.IntN(2) == 0,
		})
	}
	return in
}

// canonical is the identity of a question: its kind, argument, revision
// and input document as the policy reads it (a nil list is the empty
// list, Input.value), as JSON.
func canonical(t *testing.T, kind, arg, revision string, doc any) string {
	t.Helper()
	b, err := json.Marshal(struct {
		Kind, Arg, Revision string
		Doc                 any
	}{kind, arg, revision, doc})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func normalised(in Input) Input {
	if in.Token.Permissions == nil {
		in.Token.Permissions = []string{}
	}
	if in.Account.Privileges == nil {
		in.Account.Privileges = []string{}
	}
	if in.Account.Chain == nil {
		in.Account.Chain = []AncestorInput{}
	}
	return in
}

// TestCacheKeyDistinct: two questions share a cache key only when they
// are the same question (same kind, argument, revision and input as the
// policy reads it). Random inputs drawn from adversarial strings (the
// separators a textual key could use, bytes that mimic the encoding's
// lengths, concatenations of other strings) and varint edge numbers,
// plus hand-picked pairs that a key without lengths would merge.
func TestCacheKeyDistinct(t *testing.T) {
	seen := map[string]string{} // key -> canonical question
	check := func(key, question string) {
		t.Helper()
		if prev, ok := seen[key]; ok && prev != question {
			t.Fatalf("two questions share a key:\n%s\n%s", prev, question)
		}
		seen[key] = question
	}
	decide := func(e *snapshot, kind, arg string, in Input) {
		t.Helper()
		check(e.cacheKey(kind, arg, in), canonical(t, kind, arg, e.revision, normalised(in)))
	}
	scope := func(e *snapshot, kind, arg string, in Input) {
		t.Helper()
		n := normalised(in)
		check(e.scopeKey(kind, arg, scopeInput{in.Account}), canonical(t, kind, arg, e.revision, scopeInput{n.Account}))
	}

	// Pairs a key of concatenated or separated fields would merge.
	e := &snapshot{revision: "r1"}
	base := normalised(chained(principal("subaccount", "reports")))
	shifted := []func(*Input){
		func(in *Input) { in.Token.Permissions = []string{"a", "b"} },
		func(in *Input) { in.Token.Permissions = []string{"ab"} },
		func(in *Input) { in.Token.Permissions = []string{"a\x00b"} },
		func(in *Input) { in.Token.Permissions = []string{"a\x01b"} },
		func(in *Input) { in.Token.Permissions = []string{"\x01a", "b"} },
		func(in *Input) { in.Token.Permissions = []string{}; in.Account.Privileges = []string{"a"} },
		func(in *Input) { in.Token.Permissions = []string{"a"}; in.Account.Privileges = []string{} },
		func(in *Input) { in.Request.Method = "GET\x03"; in.Request.Route = "" },
		func(in *Input) { in.Request.Method = "GET"; in.Request.Route = "\x03" },
		func(in *Input) { in.Request.Method = "GET /"; in.Request.Route = "events" },
		func(in *Input) { in.Request.Method = "GET"; in.Request.Route = " /events" },
		func(in *Input) { in.Account.Type = "user\x01"; in.Account.Chain = nil },
		func(in *Input) { in.Account.Type = "user"; in.Account.Chain = []AncestorInput{{}} },
		func(in *Input) { in.Account.Chain = []AncestorInput{{ID: 1}, {ID: 2}} },
		func(in *Input) { in.Account.Chain = []AncestorInput{{ID: 1, Type: "\x00\x02"}} },
	}
	for _, mut := range shifted {
		in := base
		mut(&in)
		decide(e, "decide", "", in)
		scope(e, "scope", "services", in)
	}
	for _, p := range [][3]string{{"ab", "c", "r"}, {"a", "bc", "r"}, {"a", "b", "cr"}, {"a\x00", "b", "r"}, {"a", "\x00b", "r"}} {
		decide(&snapshot{revision: p[2]}, p[0], p[1], base)
		scope(&snapshot{revision: p[2]}, p[0], p[1], base)
	}

	// Random questions; equal questions must also share their key.
	r := rand.New(rand.NewPCG(24, 4))
	revisions := []string{"", "r1", "r1\x00", "\x02r1"}
	for range 20000 {
		in := randomInput(r)
		e := &snapshot{revision: pick(r, revisions)}
		kind, arg := pick(r, keyStrings), pick(r, keyStrings)
		decide(e, kind, arg, in)
		scope(e, kind, arg, in)
		if e.cacheKey(kind, arg, in) != e.cacheKey(kind, arg, normalised(in)) {
			t.Fatalf("a nil list and an empty one give different keys: %+v", in)
		}
	}
	// A decision and a scope never share a key, whatever their kinds.
	in := base
	if e.cacheKey("k", "", in) == e.scopeKey("k", "", scopeInput{in.Account}) {
		t.Error("an Input and a scopeInput share a key")
	}
}
