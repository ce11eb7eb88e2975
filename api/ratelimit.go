package api

import (
	"context"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/fleetapi/fleetapi/api/ratelimit"
	"github.com/fleetapi/fleetapi/tenancy"
)

// Defaults of the rate limits (docs/design.md §3, §4).
const (
	// DefaultRateLimit is a token's budget in requests per minute when
	// neither the token nor the configuration sets one.
	DefaultRateLimit = 1200
	// DefaultAuthFailureLimit is how many failed authentications a client
	// address may make per minute before it is refused without a lookup.
	DefaultAuthFailureLimit = 60
)

// clientIP is the address the request came from: the connection's peer,
// or, when the peer is a trusted proxy (Config.TrustedProxies), the
// right-most address of X-Forwarded-For that is not a trusted proxy.
func (s *Server) clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if len(s.cfg.TrustedProxies) == 0 || !s.trusted(host) {
		return host
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		for _, h := range strings.Split(v, ",") {
			hops = append(hops, strings.TrimSpace(h))
		}
	}
	for i := len(hops) - 1; i >= 0; i-- {
		addr, err := netip.ParseAddr(hops[i])
		if err != nil {
			return host // a malformed chain: trust only what we saw
		}
		if !s.trusted(addr.String()) {
			return addr.String()
		}
	}
	return host
}

// trusted reports whether ip is one of the trusted proxies.
func (s *Server) trusted(ip string) bool {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	addr = addr.Unmap()
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

func ceilSeconds(d time.Duration) int {
	return int(math.Ceil(d.Seconds()))
}

// scopeClient is a 429's details.scope for a client address's budget of
// failed authentications.
const scopeClient = "client"

// rateLimited is the 429 RATE_LIMITED error for a refused request.
func rateLimited(res ratelimit.Result, message string) *Error {
	e := newError(CodeRateLimited, message, map[string]any{"limit": res.Limit, "window_seconds": 60, "scope": scopeClient})
	e.RetryAfter = max(1, ceilSeconds(res.RetryAfter))
	return e
}

// checkClient refuses a client address that has used up its budget of
// failed authentications, before any token lookup (a brute-force guard).
func (s *Server) checkClient(ctx context.Context, ip string) error {
	ctx, span := s.tracer.Start(ctx, "ratelimit.client")
	defer span.End()
	res, err := s.limiter.AllowN(ctx, "authfail:"+ip, s.cfg.AuthFailureLimit, 0)
	if err != nil {
		return err
	}
	span.SetAttributes(attribute.Bool("fleet.ratelimit.allowed", res.Allowed), attribute.Bool("fleet.ratelimit.degraded", res.Degraded))
	if !res.Allowed {
		s.metrics.rateLimited(ctx, rejectAuthFailure)
		span.SetAttributes(attrErrorCode.String(CodeRateLimited)) // a refusal, not a failure: the status stays unset
		return rateLimited(res, "too many failed authentications from this address")
	}
	return nil
}

// recordAuthFailure takes one failed authentication from the client's budget.
func (s *Server) recordAuthFailure(ctx context.Context, ip string) {
	_, _ = s.limiter.AllowN(ctx, "authfail:"+ip, s.cfg.AuthFailureLimit, 1)
}

// budgets are the rate-limit budgets a request of principal p counts
// against, all at once (docs/decisions.md, "A limit never lets one
// tenant's traffic spend another tenant's budget"): its token's and those
// of its minters within its tenant (p.ChargedMinters), each with its own
// limit or the server default, so that minting children cannot multiply
// what a token is served; then the account budgets (docs/design.md §12):
// the token's account's own rate_limit and, for a subaccount, its parent
// user's, each one budget for every token of that account and of its
// subaccounts. An account without a rate_limit adds no budget. The first
// tokenBudgets(minters) entries are token budgets, the rest account
// budgets.
func (s *Server) budgets(p tenancy.Principal, minters []tenancy.Minter) []ratelimit.Budget {
	limit := func(own int) int {
		if own > 0 {
			return own
		}
		return s.cfg.RateLimit
	}
	out := make([]ratelimit.Budget, 0, 3+len(minters))
	out = append(out, ratelimit.Budget{Key: "token:" + strconv.FormatInt(p.Token.ID, 10), Limit: limit(p.Token.RateLimit)})
	for _, m := range minters {
		out = append(out, ratelimit.Budget{Key: "token:" + strconv.FormatInt(m.ID, 10), Limit: limit(m.RateLimit)})
	}
	if p.Account.RateLimit > 0 {
		out = append(out, ratelimit.Budget{Key: accountBudgetKey(p.Account.ID), Limit: p.Account.RateLimit})
	}
	if p.Account.Type == tenancy.Subaccount && len(p.Ancestors) > 0 && p.Ancestors[0].RateLimit > 0 {
		out = append(out, ratelimit.Budget{Key: accountBudgetKey(p.Ancestors[0].ID), Limit: p.Ancestors[0].RateLimit})
	}
	return out
}

// tokenBudgets is how many of budgets(p, minters) are token budgets (the
// token's and its charged minters'); the others are account budgets.
func tokenBudgets(minters []tenancy.Minter) int { return 1 + len(minters) }

// accountBudgetKey is the rate-limit key of account id's budget.
func accountBudgetKey(id int64) string { return "account:" + strconv.FormatInt(id, 10) }

// The RateLimit-* response headers, in the canonical form of their keys
// (TestRateLimitHeaderKeys).
const (
	headerRateLimitLimit     = "Ratelimit-Limit"
	headerRateLimitRemaining = "Ratelimit-Remaining"
	headerRateLimitReset     = "Ratelimit-Reset"
)

// The values of a 429's details.scope for a token (docs/design.md §12): which
// budget refused the request.
const (
	scopeToken   = "token"
	scopeAccount = "account"
)

// checkToken takes one request from every budget of the principal
// (budgets) and sets the RateLimit-* headers from the tightest.
func (s *Server) checkToken(ctx context.Context, w http.ResponseWriter, p tenancy.Principal) error {
	ctx, span := s.tracer.Start(ctx, "ratelimit")
	defer span.End()
	minters := p.ChargedMinters()
	budgets := s.budgets(p, minters)
	res, err := s.limiter.AllowAll(ctx, budgets, 1)
	if err != nil {
		return err
	}
	// The keys are written in their canonical form, which Header.Set
	// would allocate to compute for "RateLimit-…", and the three values
	// share one array: 5 allocations a request fewer, the same headers.
	v := make([]string, 3)
	v[0], v[1], v[2] = strconv.Itoa(res.Limit), strconv.Itoa(res.Remaining), strconv.Itoa(ceilSeconds(res.ResetAfter))
	h := w.Header()
	h[headerRateLimitLimit], h[headerRateLimitRemaining], h[headerRateLimitReset] = v[0:1:1], v[1:2:2], v[2:3:3]
	span.SetAttributes(
		attribute.Int("fleet.ratelimit.limit", res.Limit),
		attribute.Int("fleet.ratelimit.remaining", res.Remaining),
		attribute.Bool("fleet.ratelimit.allowed", res.Allowed),
		attribute.Bool("fleet.ratelimit.degraded", res.Degraded),
		attribute.Int("fleet.ratelimit.budgets", len(budgets)),
	)
	if !res.Allowed {
		scope := scopeToken
		if res.Budget >= tokenBudgets(minters) {
			scope = scopeAccount
		}
		s.metrics.rateLimited(ctx, rejectToken)
		// a refusal, not a failure: the status stays unset
		span.SetAttributes(attrErrorCode.String(CodeRateLimited), attribute.String("fleet.ratelimit.scope", scope))
		e := rateLimited(res, "the token's rate limit is exhausted")
		if scope == scopeAccount {
			e.Message = "the account's rate limit is exhausted"
		}
		e.Details["scope"] = scope
		return e
	}
	return nil
}
