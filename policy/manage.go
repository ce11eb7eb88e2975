package policy

import (
	"context"
	"fmt"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/rego/compile"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/fleetapi/fleetapi/tenancy"
)

// ManagementResource is the resource of the management scope
// (data.fleet.manage.accounts): the accounts table, whose row is
// input.accounts in the rule. It is not a tenant resource of
// Options.Resources; storage translates its Scope like theirs.
const ManagementResource Resource = "accounts"

// The management actions of docs/design.md §9 (input.action).
// ActionUsageRead is a read (GET /usage, docs/design.md §12): the policy
// decides whose usage a caller may read; it writes nothing and is not
// audited.
const (
	ActionUsageRead     = "usage.read"
	ActionAccountCreate = "account.create"
	ActionAccountUpdate = "account.update"
	ActionGrantsReplace = "grants.replace"
	ActionObjectCreate  = "object.create"
	ActionObjectMove    = "object.move"
	// ActionAccountErase erases an account's subtree (docs/design.md §12).
	ActionAccountErase = "account.erase"
	ActionTokenCreate  = "token.create"
	ActionTokenRevoke  = "token.revoke"
	// The webhook writes (docs/design.md §14, Webhooks): audited like the
	// management writes, never with a secret; no management decision
	// (the route's permission, privilege and write access decide them).
	ActionWebhookCreate = "webhook.create"
	ActionWebhookUpdate = "webhook.update"
	ActionWebhookDelete = "webhook.delete"
	ActionWebhookRotate = "webhook.rotate"
	ActionWebhookTest   = "webhook.test"
	ActionWebhookRetry  = "webhook.retry"
	// The zone writes (docs/design.md §15, Places): audited like the
	// management writes; no management decision (the route's permission
	// and write access decide them).
	ActionZoneCreate = "zone.create"
	ActionZoneUpdate = "zone.update"
	ActionZoneDelete = "zone.delete"
)

// CodeManagementDenied is the code of every management denial; its
// details.reason names the rule (docs/design.md §4, §9).
const CodeManagementDenied = "MANAGEMENT_DENIED"

// ManagementInput is the document data.fleet.manage.decision reads
// (schemas/manage_input.json): the caller as in Input, its token with
// the limits a new token must stay within, the action, the account acted
// on and the fields asked for.
type ManagementInput struct {
	Account AccountInput    `json:"account"`
	Token   ManagementToken `json:"token"`
	// Action is one of the Action constants.
	Action string `json:"action"`
	// Target is the account acted on: for account.create the account the
	// new one is created under (nil for an account created at the top);
	// for tokens and objects their owning account. The Go side has
	// already checked that it is in the caller's management scope (404
	// otherwise); the policy checks it again.
	Target *TargetInput `json:"target"`
	// Limits are the caller's own account limits, which what it sets on
	// the accounts it manages stays within (docs/design.md §12).
	Limits AccountLimits `json:"limits"`
	// Change holds the fields asked for, as JSON values (strings, numbers,
	// booleans, nil, []string, []any, map[string]any): account.create the
	// new account's fields (manager_id 0 for none); account.update exactly
	// the fields of the request body; grants.replace {"imei": [...]};
	// object.create the device; object.move {"imei", "from_account_id",
	// "account_id"}; token.create TokenChange's. Never a
	// secret.
	Change map[string]any `json:"change"`
}

// ManagementToken holds the facts of the calling token that the
// management decision reads.
type ManagementToken struct {
	ID          int64    `json:"id"`
	Permissions []string `json:"permissions"`
	// ExpiresAt is the token's expiry; nil: it never expires.
	ExpiresAt *time.Time `json:"expires_at"`
	// RateLimit is the token's effective limit in requests per minute (its
	// own, or the server default); nil: unlimited.
	RateLimit *int `json:"rate_limit"`
	// Generation is how many tokens minted it (its minters); 0 for a token
	// made by an operator.
	Generation int `json:"generation"`
}

// AccountLimits are an account's own limits as the management decision
// reads them (input.limits).
type AccountLimits struct {
	// RateLimit is the account's rate_limit in requests per minute; nil:
	// it has none.
	RateLimit *int `json:"rate_limit"`
	// Quotas, when not nil, are the caller's own quota limits in force
	// (docs/design.md §12): quota name → limit, nil for unlimited. The Go side
	// sets them for an account.update that asks for quotas and for every
	// account.create.
	Quotas map[string]*int64 `json:"quotas,omitempty"`
}

// TargetInput holds the facts of the account a management action is on.
type TargetInput struct {
	ID        int64  `json:"id"`
	Type      string `json:"type"`
	ManagerID int64  `json:"manager_id"`
	// Chain holds the accounts above it, nearest first.
	Chain []AncestorInput `json:"chain"`
	// ChainComplete is true when Chain is whole (see
	// AccountInput.ChainComplete); a target whose chain is not is outside
	// the caller's scope (fail closed).
	ChainComplete bool `json:"chain_complete"`
	// OwnedIMEI, for grants.replace, lists the devices among
	// Change["imei"] that the target's parent owns (or every device of
	// the parent).
	OwnedIMEI []string `json:"owned_imei"`
}

// NewManagementInput builds the caller's part of a management input for
// principal p: the account as NewInput has it (expiry on today) and the
// token, whose effective rate limit is its own or defaultRateLimit (the
// server's; 0 or less: unlimited). The caller sets Action, Target and
// Change.
func NewManagementInput(p tenancy.Principal, today time.Time, defaultRateLimit int) ManagementInput {
	in := NewInput(p, "", "", today)
	tok := ManagementToken{ID: in.Token.ID, Permissions: in.Token.Permissions, Generation: len(p.Minters)}
	if p.Token.ExpiresAt != nil {
		t := p.Token.ExpiresAt.UTC()
		tok.ExpiresAt = &t
	}
	switch {
	case p.Token.RateLimit > 0:
		tok.RateLimit = &p.Token.RateLimit
	case defaultRateLimit > 0:
		tok.RateLimit = &defaultRateLimit
	}
	mi := ManagementInput{Account: in.Account, Token: tok, Change: map[string]any{}}
	if p.Account.RateLimit > 0 {
		mi.Limits.RateLimit = &p.Account.RateLimit
	}
	return mi
}

// NewTargetInput builds the target of a management input from the stored
// account a and the accounts above it, nearest first (expiry on today);
// whole says whether they could be loaded whole.
func NewTargetInput(a tenancy.Account, ancestors []tenancy.Account, whole bool, today time.Time) *TargetInput {
	in := NewInput(tenancy.Principal{Account: a, Ancestors: ancestors}, "", "", today)
	return &TargetInput{ID: a.ID, Type: string(a.Type), ManagerID: a.ManagerID, Chain: in.Account.Chain, ChainComplete: whole}
}

// TokenChange is the Change of a token.create: the values the new token
// will have, an omitted expiry or rate limit already filled in with the
// creating token's (ManagementToken's units: nil expiry never expires, nil
// rate limit is unlimited).
func TokenChange(accountID int64, name string, permissions []string, expiresAt *time.Time, rateLimit *int) map[string]any {
	perms := make([]any, len(permissions))
	for i, p := range permissions {
		perms[i] = p
	}
	c := map[string]any{"account_id": accountID, "name": name, "permissions": perms, "expires_at": nil, "rate_limit": nil}
	if expiresAt != nil {
		c["expires_at"] = expiresAt.UTC().Format(time.RFC3339Nano)
	}
	if rateLimit != nil {
		c["rate_limit"] = *rateLimit
	}
	return c
}

// value builds the Rego input document of in.
func (in ManagementInput) value() (ast.Object, error) {
	expires := ast.InternedNullTerm
	if in.Token.ExpiresAt != nil {
		expires = ast.StringTerm(in.Token.ExpiresAt.UTC().Format(time.RFC3339Nano))
	}
	rate := ast.InternedNullTerm
	if in.Token.RateLimit != nil {
		rate = intTerm(int64(*in.Token.RateLimit))
	}
	accountRate := ast.InternedNullTerm
	if in.Limits.RateLimit != nil {
		accountRate = intTerm(int64(*in.Limits.RateLimit))
	}
	target := ast.InternedNullTerm
	if t := in.Target; t != nil {
		target = ast.ObjectTerm(
			ast.Item(ast.InternedTerm("id"), intTerm(t.ID)),
			ast.Item(ast.InternedTerm("type"), ast.StringTerm(t.Type)),
			ast.Item(ast.InternedTerm("manager_id"), intTerm(t.ManagerID)),
			ast.Item(ast.InternedTerm("chain"), chainTerm(t.Chain)),
			ast.Item(ast.InternedTerm("chain_complete"), ast.BooleanTerm(t.ChainComplete)),
			ast.Item(ast.InternedTerm("owned_imei"), stringsTerm(t.OwnedIMEI)),
		)
	}
	change := map[string]any{}
	if in.Change != nil {
		change = in.Change
	}
	cv, err := ast.InterfaceToValue(change)
	if err != nil {
		return nil, fmt.Errorf("policy: management change: %w", err)
	}
	limits := ast.NewObject(ast.Item(ast.InternedTerm("rate_limit"), accountRate))
	if in.Limits.Quotas != nil {
		q := ast.NewObject()
		for name, v := range in.Limits.Quotas {
			t := ast.InternedNullTerm
			if v != nil {
				t = intTerm(*v)
			}
			q.Insert(ast.StringTerm(name), t)
		}
		limits.Insert(ast.InternedTerm("quotas"), ast.NewTerm(q))
	}
	obj := ast.NewObject(
		ast.Item(ast.InternedTerm("account"), accountTerm(in.Account)),
		ast.Item(ast.InternedTerm("token"), ast.ObjectTerm(
			ast.Item(ast.InternedTerm("id"), intTerm(in.Token.ID)),
			ast.Item(ast.InternedTerm("permissions"), stringsTerm(in.Token.Permissions)),
			ast.Item(ast.InternedTerm("expires_at"), expires),
			ast.Item(ast.InternedTerm("rate_limit"), rate),
			ast.Item(ast.InternedTerm("generation"), intTerm(int64(in.Token.Generation))),
		)),
		ast.Item(ast.InternedTerm("limits"), ast.NewTerm(limits)),
		ast.Item(ast.InternedTerm("action"), ast.StringTerm(in.Action)),
		ast.Item(ast.InternedTerm("target"), target),
		ast.Item(ast.InternedTerm("change"), ast.NewTerm(cv)),
	)
	return obj, nil
}

// DecideManagement evaluates data.fleet.manage.decision for in: may the
// caller make this management write? A denial is a Decision with Code
// CodeManagementDenied and Details["reason"]; the error (ErrUndefined or
// an evaluation error) means no decision could be made and the write must
// fail. It is not cached: the input holds per-request facts (the change,
// the parent's devices, the token's limits) and writes are rare. Every
// call writes one decision log line with the action.
func (e *snapshot) DecideManagement(ctx context.Context, in ManagementInput) (Decision, error) {
	ctx, span := e.tracer.Start(ctx, "policy.manage")
	defer span.End()
	span.SetAttributes(
		attribute.String("fleet.manage.action", in.Action),
		attribute.String("fleet.policy.revision", e.revision),
	)
	start := time.Now()
	d, err := e.decideManagement(ctx, in)
	elapsed := time.Since(start)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "management decision failed")
		e.logManagement(ctx, in, Decision{Code: "POLICY_ERROR"}, elapsed, err)
		return Decision{}, err
	}
	code := d.Code
	if d.Allow {
		code = "ALLOW"
	}
	span.SetAttributes(attribute.String("fleet.decision.code", code))
	e.decisions.add(attribute.String("code", code), attribute.String("action", in.Action))
	e.logManagement(ctx, in, d, elapsed, nil)
	return d, nil
}

func (e *snapshot) decideManagement(ctx context.Context, in ManagementInput) (Decision, error) {
	input, err := in.value()
	if err != nil {
		return Decision{}, err
	}
	rs, err := e.manageQ.Eval(ctx, rego.EvalParsedInput(input))
	if err != nil {
		return Decision{}, fmt.Errorf("evaluate management decision: %w", err)
	}
	return managementDecisionFrom(rs)
}

// managementDecisionFrom reads a management decision: a well-formed
// decision whose denials are MANAGEMENT_DENIED with a reason (fail closed).
func managementDecisionFrom(rs rego.ResultSet) (Decision, error) {
	d, err := decisionFrom(rs)
	if err != nil || d.Allow {
		return d, err
	}
	if reason, _ := d.Details["reason"].(string); d.Code != CodeManagementDenied || reason == "" {
		return Decision{}, fmt.Errorf("%w: a management denial %q without a reason", ErrUndefined, d.Code)
	}
	return d, nil
}

// logManagement writes the decision log line of a management decision.
func (e *snapshot) logManagement(ctx context.Context, in ManagementInput, d Decision, elapsed time.Duration, evalErr error) {
	if e.log == nil {
		return
	}
	rec := e.newRecord(ctx, in.Token.ID, in.Account, d, elapsed, evalErr)
	rec.Path = ManagementDecisionPath
	rec.Input, rec.Erased = redactedManagementInput(in)
	rec.Custom.Action = in.Action
	if in.Target != nil {
		rec.Custom.TargetAccountID = in.Target.ID
	}
	rec.Custom.Reason, _ = d.Details["reason"].(string)
	e.writeRecord(rec)
}

// ManagementScope compiles data.fleet.manage.accounts for the account of
// in into the accounts it manages: a Scope of ManagementResource, made
// exactly like the row scopes (Engine.Scope): partially evaluated with
// input.accounts unknown and input.account alone known, cached by the
// policy revision and the account (Scope.Key), fail closed (an error
// wrapping ErrScope).
func (e *snapshot) ManagementScope(ctx context.Context, in Input) (Scope, error) {
	return e.tracedScope(ctx, ManagementResource, func(ctx context.Context) (Scope, bool, error) {
		return e.managementScope(ctx, scopeInput{Account: in.Account})
	})
}

func (e *snapshot) managementScope(ctx context.Context, in scopeInput) (Scope, bool, error) {
	key := e.scopeKey("manage-scope", string(ManagementResource), in)
	return cached(e, "scope", key, func() (Scope, error) {
		s, err := e.compileManagementScope(ctx, in)
		s.key = key
		return s, err
	})
}

func (e *snapshot) compileManagementScope(ctx context.Context, in scopeInput) (Scope, error) {
	return e.compileWith(ctx, in, ManagementResource, e.manageScopeQ, e.manageUnrestrictedQ)
}

// prepareManagement prepares the queries of package fleet.manage. The
// policy set must define its decision, scope and unrestricted rules, and
// no tenant resource may take the management scope's name.
func (e *snapshot) prepareManagement(ctx context.Context) error {
	for _, r := range e.resources {
		if r == ManagementResource {
			return fmt.Errorf("resource %q: the name of the management scope, not a tenant resource", r)
		}
	}
	for _, rule := range []string{"decision", "accounts", "unrestricted"} {
		if len(e.compiler.GetRulesExact(ast.MustParseRef("data.fleet.manage."+rule))) == 0 {
			return fmt.Errorf("the policy has no rule data.fleet.manage.%s (docs/design.md §9)", rule)
		}
	}
	var err error
	if e.manageQ, err = e.prepareEval(ctx, "data.fleet.manage.decision"); err != nil {
		return err
	}
	if e.manageUnrestrictedQ, err = e.prepareEval(ctx, "data.fleet.manage.unrestricted"); err != nil {
		return err
	}
	if e.manageScopeQ, err = compile.New(
		compile.Target("ucast", "all"),
		compile.ParsedUnknowns(ast.MustParseTerm("input."+string(ManagementResource))),
		compile.ParsedQuery(ast.MustParseBody("data.fleet.manage.accounts")),
		compile.Rego(rego.Compiler(e.compiler)),
	).Prepare(ctx); err != nil {
		return fmt.Errorf("prepare management scope: %w", err)
	}
	return nil
}

// verifyManagement checks, for a sample principal of accountType, that the
// management decision is well formed and that the management scope
// compiles into a Scope that the schema accepts (Schema.CheckScope),
// unrestricted for admins only.
func (e *snapshot) verifyManagement(ctx context.Context, accountType string) error {
	in := samplePrincipal(accountType)
	mi := ManagementInput{
		Account: in.Account,
		Token:   ManagementToken{ID: in.Token.ID, Permissions: in.Token.Permissions},
		Action:  ActionTokenRevoke,
		Target:  &TargetInput{ID: in.Account.ID, Type: in.Account.Type, ManagerID: in.Account.ManagerID, ChainComplete: true},
	}
	if _, err := e.decideManagement(ctx, mi); err != nil {
		return fmt.Errorf("management decision for %s principal: %w", article(accountType), err)
	}
	scope, err := e.compileManagementScope(ctx, scopeInput{Account: in.Account})
	if err == nil && accountType != "admin" && scope.unrestricted {
		err = fmt.Errorf("unrestricted for a principal that is not an admin")
	}
	if err == nil {
		err = e.enforceable(scope)
	}
	if err != nil {
		return fmt.Errorf("management scope for %s principal: %w", article(accountType), err)
	}
	return nil
}
