package policy

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

func TestLRUCache(t *testing.T) {
	c := newLRUCache(2)
	c.put("a", 1)
	c.put("b", 2)
	if v, ok := c.get("a"); !ok || v != 1 {
		t.Fatalf("get a = %v, %t", v, ok)
	}
	c.put("c", 3) // evicts b, the least recently used
	if _, ok := c.get("b"); ok {
		t.Error("b survived eviction")
	}
	if _, ok := c.get("a"); !ok {
		t.Error("a was evicted")
	}
	c.put("a", 10)
	if v, _ := c.get("a"); v != 10 || c.len() != 2 {
		t.Errorf("a = %v, len %d", v, c.len())
	}
	var off *lruCache = newLRUCache(-1)
	off.put("a", 1)
	if _, ok := off.get("a"); ok || off.len() != 0 {
		t.Error("a disabled cache kept a value")
	}
	if newLRUCache(0).max != DefaultCacheSize {
		t.Error("size 0 is not the default")
	}
}

// inputMutations change one leaf field of Input each; the test below
// checks that together they cover every field.
var inputMutations = map[string]func(*Input){
	"request.method":         func(in *Input) { in.Request.Method = "POST" },
	"request.route":          func(in *Input) { in.Request.Route = "/reports" },
	"token.id":               func(in *Input) { in.Token.ID++ },
	"token.permissions":      func(in *Input) { in.Token.Permissions = []string{"GET /services"} },
	"account.id":             func(in *Input) { in.Account.ID++ },
	"account.type":           func(in *Input) { in.Account.Type = "user" },
	"account.manager":        func(in *Input) { in.Account.ManagerID++ },
	"account.active":         func(in *Input) { in.Account.Active = false },
	"account.expired":        func(in *Input) { in.Account.Expired = true },
	"account.read_only":      func(in *Input) { in.Account.ReadOnly = true },
	"account.privs":          func(in *Input) { in.Account.Privileges = []string{"event_notifications"} },
	"chain.id":               func(in *Input) { in.Account.Chain[0].ID++ },
	"chain.type":             func(in *Input) { in.Account.Chain[0].Type = "admin" },
	"chain.active":           func(in *Input) { in.Account.Chain[0].Active = false },
	"chain.expired":          func(in *Input) { in.Account.Chain[0].Expired = true },
	"chain.read_only":        func(in *Input) { in.Account.Chain[0].ReadOnly = true },
	"account.chain_complete": func(in *Input) { in.Account.ChainComplete = !in.Account.ChainComplete },
}

// chained returns in with the chain of a subaccount: its user and an admin.
func chained(in Input) Input {
	in.Account.Chain = []AncestorInput{{ID: 3, Type: "user", Active: true}, {ID: 1, Type: "admin", Active: true}}
	return in
}

func leafFields(t reflect.Type) int {
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct {
		return leafFields(t.Elem())
	}
	if t.Kind() != reflect.Struct {
		return 1
	}
	n := 0
	for i := range t.NumField() {
		n += leafFields(t.Field(i).Type)
	}
	return n
}

// TestCacheKeyCoversInput: a change to any field of the input, to the
// resource or to the policy revision is a cache miss with a fresh answer;
// for a scope, a change to any account fact is, and a change to the token
// or the route is a hit (the scope rules read the account alone): the
// scope is not compiled again.
func TestCacheKeyCoversInput(t *testing.T) {
	if got := leafFields(reflect.TypeOf(Input{})); got != len(inputMutations) {
		t.Fatalf("Input has %d fields, the test mutates %d: add the new field", got, len(inputMutations))
	}
	ctx := context.Background()
	e := newEngine(t, Options{}).cur.Load()
	fresh := newEngine(t, Options{CacheSize: -1}).cur.Load()
	base := chained(principal("subaccount", "reports"))
	if _, cached, _ := e.decide(ctx, base); cached {
		t.Fatal("first decision cached")
	}
	if _, cached, _ := e.decide(ctx, base); !cached {
		t.Fatal("second decision not cached")
	}
	for _, r := range testResources {
		_, _, _ = e.scope(ctx, scopeInput{base.Account}, r)
	}
	_, _ = e.Permissions(ctx, base)
	for name, mut := range inputMutations {
		t.Run(name, func(t *testing.T) {
			in := chained(principal("subaccount", "reports"))
			mut(&in)
			d, cached, err := e.decide(ctx, in)
			want, _, _ := fresh.decide(ctx, in)
			if err != nil || cached || !reflect.DeepEqual(d, want) {
				t.Errorf("decide: cached %t, %+v, %v; want fresh %+v", cached, d, err, want)
			}
			account := strings.HasPrefix(name, "account.") || strings.HasPrefix(name, "chain.")
			for _, r := range testResources {
				rs, cached, err := e.scope(ctx, scopeInput{in.Account}, r)
				want, _, _ := fresh.scope(ctx, scopeInput{in.Account}, r)
				if err != nil || cached == account || !reflect.DeepEqual(rs, want) {
					t.Errorf("scope %s: cached %t (account fact changed: %t), %s, %v; want %s", r, cached, account, rs, err, want)
				}
			}
			before := e.cache.len()
			p, err := e.Permissions(ctx, in)
			want2, _ := fresh.Permissions(ctx, in)
			if err != nil || e.cache.len() != before+1 || !reflect.DeepEqual(p, want2) {
				t.Errorf("permissions: not a fresh answer (%v)", err)
			}
		})
	}
	k1 := e.scopeKey("scope", "services", scopeInput{base.Account})
	k2 := e.scopeKey("scope", "reports", scopeInput{base.Account})
	other := &snapshot{revision: "another"}
	k3 := other.scopeKey("scope", "services", scopeInput{base.Account})
	if k1 == k2 || k1 == k3 {
		t.Error("resource or revision missing from the cache key")
	}
}

func TestCacheDisabled(t *testing.T) {
	e := newEngine(t, Options{CacheSize: -1}).cur.Load()
	for range 2 {
		if _, cached, _ := e.decide(context.Background(), principal("user")); cached {
			t.Fatal("cached with the cache off")
		}
	}
}
