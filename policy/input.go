package policy

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/fleetapi/fleetapi/tenancy"
)

// Input is the document the policy reads (docs/design.md §6; JSON Schema in
// schemas/input.json).
type Input struct {
	Request RequestInput `json:"request"`
	Token   TokenInput   `json:"token"`
	Account AccountInput `json:"account"`
}

// RequestInput names the route being called by its template.
type RequestInput struct {
	Method string `json:"method"`
	Route  string `json:"route"`
}

// TokenInput holds the facts of the calling token that the policy reads.
type TokenInput struct {
	ID          int64    `json:"id"`
	Permissions []string `json:"permissions"`
}

// AccountInput holds the facts of the calling account that the policy reads.
type AccountInput struct {
	ID         int64    `json:"id"`
	Type       string   `json:"type"`
	ManagerID  int64    `json:"manager_id"`
	Active     bool     `json:"active"`
	Expired    bool     `json:"expired"`
	ReadOnly   bool     `json:"read_only"`
	Privileges []string `json:"privileges"`
	// Chain holds the accounts above this one, nearest first (its manager,
	// that manager's manager, ...): their state flows down (docs/design.md §2).
	Chain []AncestorInput `json:"chain"`
	// ChainComplete is true when Chain is the whole chain to the top of the
	// tree; false when it could not be loaded whole (a missing row, a loop,
	// more accounts than the fixed levels allow), and then the policy
	// denies (fail closed).
	ChainComplete bool `json:"chain_complete"`
}

// AncestorInput holds the facts of one account above the caller's account
// that the policy reads.
type AncestorInput struct {
	ID       int64  `json:"id"`
	Type     string `json:"type"`
	Active   bool   `json:"active"`
	Expired  bool   `json:"expired"`
	ReadOnly bool   `json:"read_only"`
}

// NewInput builds the policy input for principal p calling method route
// (a route template such as "/events/{id}"). today is the current day: an
// account, and each account above it, is expired when its expiry date is
// before today (tenancy.Account.Expired).
func NewInput(p tenancy.Principal, method, route string, today time.Time) Input {
	perms := p.Token.Permissions
	if perms == nil {
		perms = []string{}
	}
	privs := p.Account.Privileges
	if privs == nil {
		privs = []string{}
	}
	chain := make([]AncestorInput, len(p.Ancestors))
	for i, a := range p.Ancestors {
		chain[i] = AncestorInput{
			ID:       a.ID,
			Type:     string(a.Type),
			Active:   a.Active,
			Expired:  a.Expired(today),
			ReadOnly: a.ReadOnly,
		}
	}
	return Input{
		Request: RequestInput{Method: method, Route: route},
		Token:   TokenInput{ID: p.Token.ID, Permissions: perms},
		Account: AccountInput{
			ID:         p.Account.ID,
			Type:       string(p.Account.Type),
			ManagerID:  p.Account.ManagerID,
			Active:     p.Account.Active,
			Expired:    p.Account.Expired(today),
			ReadOnly:   p.Account.ReadOnly,
			Privileges: privs,
			Chain:      chain,
			// tenancy marks the incomplete chains, so that a principal
			// built by hand (tests, synthetic principals) is whole.
			ChainComplete: !p.AncestorsIncomplete,
		},
	}
}

// scopeInput is the part of Input that the scope rules read: the account
// alone. The scope of a resource is evaluated on it and cached by it, so
// one account behind many tokens and routes has one scope per resource,
// and a rule that reads anything else (input.token, input.request) finds
// it undefined: no row (fail closed).
type scopeInput struct {
	Account AccountInput `json:"account"`
}

// value builds the Rego input document of the scope rules.
func (in scopeInput) value() ast.Object {
	return ast.NewObject(ast.Item(ast.InternedTerm("account"), accountTerm(in.Account)))
}

// Document returns the Rego input document of in, as Decide evaluates it
// (lists never null): for tools that evaluate other rules of the set on it
// with more facts added (policy/oracle adds the row).
func (in Input) Document() ast.Object { return in.value() }

// value builds the Rego input document of in without a JSON round trip.
// Lists are never null, so a missing list reads as empty.
func (in Input) value() ast.Object {
	return ast.NewObject(
		ast.Item(ast.InternedTerm("request"), ast.ObjectTerm(
			ast.Item(ast.InternedTerm("method"), ast.StringTerm(in.Request.Method)),
			ast.Item(ast.InternedTerm("route"), ast.StringTerm(in.Request.Route)),
		)),
		ast.Item(ast.InternedTerm("token"), ast.ObjectTerm(
			ast.Item(ast.InternedTerm("id"), intTerm(in.Token.ID)),
			ast.Item(ast.InternedTerm("permissions"), stringsTerm(in.Token.Permissions)),
		)),
		ast.Item(ast.InternedTerm("account"), accountTerm(in.Account)),
	)
}

// accountTerm is the object of input.account.
func accountTerm(a AccountInput) *ast.Term {
	return ast.ObjectTerm(
		ast.Item(ast.InternedTerm("id"), intTerm(a.ID)),
		ast.Item(ast.InternedTerm("type"), ast.StringTerm(a.Type)),
		ast.Item(ast.InternedTerm("manager_id"), intTerm(a.ManagerID)),
		ast.Item(ast.InternedTerm("active"), ast.BooleanTerm(a.Active)),
		ast.Item(ast.InternedTerm("expired"), ast.BooleanTerm(a.Expired)),
		ast.Item(ast.InternedTerm("read_only"), ast.BooleanTerm(a.ReadOnly)),
		ast.Item(ast.InternedTerm("privileges"), stringsTerm(a.Privileges)),
		ast.Item(ast.InternedTerm("chain"), chainTerm(a.Chain)),
		ast.Item(ast.InternedTerm("chain_complete"), ast.BooleanTerm(a.ChainComplete)),
	)
}

// chainTerm is the array of input.account.chain; never null.
func chainTerm(chain []AncestorInput) *ast.Term {
	terms := make([]*ast.Term, len(chain))
	for i, a := range chain {
		terms[i] = ast.ObjectTerm(
			ast.Item(ast.InternedTerm("id"), intTerm(a.ID)),
			ast.Item(ast.InternedTerm("type"), ast.StringTerm(a.Type)),
			ast.Item(ast.InternedTerm("active"), ast.BooleanTerm(a.Active)),
			ast.Item(ast.InternedTerm("expired"), ast.BooleanTerm(a.Expired)),
			ast.Item(ast.InternedTerm("read_only"), ast.BooleanTerm(a.ReadOnly)),
		)
	}
	return ast.ArrayTerm(terms...)
}

func intTerm(n int64) *ast.Term {
	return ast.NumberTerm(json.Number(strconv.FormatInt(n, 10)))
}

func stringsTerm(ss []string) *ast.Term {
	terms := make([]*ast.Term, len(ss))
	for i, s := range ss {
		terms[i] = ast.StringTerm(s)
	}
	return ast.ArrayTerm(terms...)
}

// cacheKey identifies an answer by everything it can depend on: the kind
// of question, its extra argument (a resource), the policy revision and
// the input document the question is evaluated on (doc, as JSON). Any
// change to any field of doc is another key.
func (e *snapshot) cacheKey(kind, arg string, doc any) (string, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	return e.keyOf(kind, arg, b), nil
}

func (e *snapshot) keyOf(kind, arg string, doc []byte) string {
	b := make([]byte, 0, len(kind)+len(arg)+len(e.revision)+len(doc)+3)
	b = append(b, kind...)
	b = append(b, 0)
	b = append(b, arg...)
	b = append(b, 0)
	b = append(b, e.revision...)
	b = append(b, 0)
	b = append(b, doc...)
	return string(b)
}

// evalInput is the rego option that passes in as the input document.
func evalInput(in Input) rego.EvalOption { return rego.EvalParsedInput(in.value()) }
