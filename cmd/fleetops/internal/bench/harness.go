package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// harness holds what every scenario shares: the HTTP client, the floor's
// database and store, the policy engine, and the principal of each role.
type harness struct {
	cfg    config
	out    io.Writer
	client *http.Client
	db     *bun.DB
	store  *storage.Store
	engine *policy.Engine
	// tokens and principals by role (admin, manager, user, subaccount):
	// the fixed workload's.
	tokens     map[string]string
	principals map[string]tenancy.Principal
	// pool is the mixed workload's principals by role (the fixed admin
	// stands in for the admins: there is one).
	pool map[string][]member
	// terms are the search terms of the mixed workload, derived from the
	// data on first use (searchTerms).
	terms []string
	// eventIDs are the user's event rules, for event_by_id.
	eventIDs []int64
	today    time.Time
}

// newHarness reads the tokens, connects the floor's database, prepares
// the policy engine and finds the principal of every token (and the
// user's event ids).
func newHarness(ctx context.Context, cfg config, out io.Writer) (*harness, error) {
	tokens, err := readTokens(cfg.TokensFile)
	if err != nil {
		return nil, err
	}
	h := &harness{cfg: cfg, out: out, tokens: tokens.fixed, principals: map[string]tenancy.Principal{}, pool: map[string][]member{}, today: time.Now().UTC()}
	h.client = &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			MaxIdleConns:        cfg.Concurrency,
			MaxIdleConnsPerHost: cfg.Concurrency,
			MaxConnsPerHost:     cfg.Concurrency,
			IdleConnTimeout:     time.Minute,
			DisableCompression:  true,
		},
	}
	h.db = storage.Open(cfg.DatabaseURL, storage.Options{MaxOpenConns: cfg.Pool, ReadTimeout: time.Minute})
	if err := h.db.PingContext(ctx); err != nil {
		h.db.Close()
		return nil, fmt.Errorf("database: %w", err)
	}
	h.store = storage.NewStore(h.db)
	if h.engine, err = policy.New(ctx, policy.Options{Schema: storage.Schema()}); err != nil {
		h.db.Close()
		return nil, fmt.Errorf("policy: %w", err)
	}
	for role, secret := range tokens.fixed {
		p, err := h.principalOf(ctx, role, secret)
		if err != nil {
			h.db.Close()
			return nil, err
		}
		h.principals[role] = p
	}
	for role, secrets := range tokens.pool {
		for _, secret := range secrets {
			p, err := h.principalOf(ctx, role, secret)
			if err != nil {
				h.db.Close()
				return nil, err
			}
			h.pool[role] = append(h.pool[role], member{token: secret, principal: p})
		}
	}
	if p, ok := h.principals["admin"]; ok && len(h.pool["admin"]) == 0 {
		h.pool["admin"] = []member{{token: tokens.fixed["admin"], principal: p}}
	}
	if cfg.RLS {
		if err := h.setupRLS(ctx); err != nil {
			h.db.Close()
			return nil, err
		}
	}
	if p, ok := h.principals["user"]; ok {
		if err := h.db.NewRaw("SELECT event_id FROM events WHERE account_id = ? ORDER BY event_id", p.Account.ID).
			Scan(ctx, &h.eventIDs); err != nil {
			h.db.Close()
			return nil, fmt.Errorf("event ids: %w", err)
		}
	}
	return h, nil
}

// principalOf looks up the principal of a token secret of role.
func (h *harness) principalOf(ctx context.Context, role, secret string) (tenancy.Principal, error) {
	hash, err := tenancy.HashToken(secret)
	if err != nil {
		return tenancy.Principal{}, fmt.Errorf("%s token: %w", role, err)
	}
	p, found, err := h.store.PrincipalByTokenHash(ctx, hash)
	if err != nil || !found {
		return p, fmt.Errorf("%s token: not in this database (found %v, %v): generate and harness must use the same database", role, found, err)
	}
	return p, nil
}

// close releases the HTTP connections and the database.
func (h *harness) close() {
	h.client.CloseIdleConnections()
	h.db.Close()
}

// tokenSet is the token file: one fixed token per role (the fixed
// workload's), and the pool of the mixed workload by role.
type tokenSet struct {
	fixed map[string]string
	pool  map[string][]string
}

// readTokens reads the JSON lines of `fleetapi generate --tokens`: role →
// token secret, and the pool tokens ("pool": true) by role.
func readTokens(path string) (tokenSet, error) {
	set := tokenSet{fixed: map[string]string{}, pool: map[string][]string{}}
	f, err := os.Open(path)
	if err != nil {
		return set, fmt.Errorf("tokens: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var t struct {
			Role  string `json:"role"`
			Token string `json:"token"`
			Pool  bool   `json:"pool"`
		}
		if err := json.Unmarshal([]byte(line), &t); err != nil {
			return set, fmt.Errorf("tokens: %s: %w", path, err)
		}
		switch {
		case t.Role == "" || t.Token == "":
		case t.Pool:
			set.pool[t.Role] = append(set.pool[t.Role], t.Token)
		default:
			set.fixed[t.Role] = t.Token
		}
	}
	if err := sc.Err(); err != nil {
		return set, fmt.Errorf("tokens: %w", err)
	}
	if len(set.fixed) == 0 {
		return set, fmt.Errorf("tokens: %s holds no tokens", path)
	}
	return set, nil
}

// scopeOf is the row scope the API computes for role calling method route
// on resource: the same input (policy.NewInput, today's expiry) and the
// same engine and policy set.
func (h *harness) scopeOf(ctx context.Context, role, method, route string, resource policy.Resource) (policy.Scope, policy.Input, error) {
	p, ok := h.principals[role]
	if !ok {
		return policy.Scope{}, policy.Input{}, fmt.Errorf("no %s token in %s", role, h.cfg.TokensFile)
	}
	in := policy.NewInput(p, method, route, h.today)
	rs, err := h.engine.Scope(ctx, in, resource)
	return rs, in, err
}

// run runs every selected scenario, then prints the report.
func (h *harness) run(ctx context.Context) error {
	fmt.Fprintf(h.out, "fleetops bench: %s, concurrency %d, %s per measurement (warm-up %s), floor pool %d\n",
		h.cfg.BaseURL, h.cfg.Concurrency, h.boundText(), h.cfg.Warmup, h.cfg.Pool)
	var results []scenarioResult
	var explains []explained
	for _, name := range strings.Split(h.cfg.Scenarios, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		sc, err := h.scenario(ctx, name)
		if err != nil {
			return err
		}
		res, err := h.measure(ctx, sc)
		if err != nil {
			return err
		}
		results = append(results, res)
		fmt.Fprintln(h.out, res.line())
		if h.cfg.ExplainFile != "" && sc.reference == nil {
			ex, err := h.explain(ctx, sc)
			if err != nil {
				return err
			}
			explains = append(explains, ex)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	table := markdownTable(results)
	fmt.Fprintln(h.out)
	fmt.Fprint(h.out, table)
	if h.cfg.MarkdownFile != "" {
		if err := os.WriteFile(h.cfg.MarkdownFile, []byte(table), 0o644); err != nil {
			return err
		}
	}
	if h.cfg.ExplainFile != "" {
		if err := os.WriteFile(h.cfg.ExplainFile, []byte(explainMarkdown(explains)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// boundText describes how each measurement is bounded.
func (h *harness) boundText() string {
	switch {
	case h.cfg.Requests > 0 && h.cfg.Duration > 0:
		return fmt.Sprintf("%d requests or %s", h.cfg.Requests, h.cfg.Duration)
	case h.cfg.Requests > 0:
		return fmt.Sprintf("%d requests", h.cfg.Requests)
	}
	return h.cfg.Duration.String()
}
