package policy

import (
	"encoding/binary"
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
// with more facts added (tooling/oracle adds the row).
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
// every field of the input document the question is evaluated on (in).
// Any change to any field of in is another key.
//
// The key is a binary encoding built in one allocation, not JSON
// (json.Marshal of the input was most of a cached decision's
// allocations): each string is preceded by its length, each
// number is a varint, each list by its count, in the fixed order of the
// fields. Every element is self-delimiting, so the encoding is injective:
// two different inputs never share a key, whatever bytes their strings
// hold (TestCacheKeyDistinct). A nil list and an empty one encode alike;
// the policy reads both as the same empty array (Input.value).
func (e *snapshot) cacheKey(kind, arg string, in Input) string {
	var buf [512]byte
	return string(in.appendKey(e.appendKeyPrefix(buf[:0], kind, arg)))
}

// scopeKey is cacheKey for the questions evaluated on the account alone.
func (e *snapshot) scopeKey(kind, arg string, in scopeInput) string {
	var buf [512]byte
	return string(in.appendKey(e.appendKeyPrefix(buf[:0], kind, arg)))
}

// appendKeyPrefix appends what every key starts with: the kind of
// question, its argument and the policy revision.
func (e *snapshot) appendKeyPrefix(b []byte, kind, arg string) []byte {
	b = appendKeyString(b, kind)
	b = appendKeyString(b, arg)
	return appendKeyString(b, e.revision)
}

// appendKey appends the encoding of every field of in (cacheKey).
func (in Input) appendKey(b []byte) []byte {
	b = append(b, 'd')
	b = appendKeyString(b, in.Request.Method)
	b = appendKeyString(b, in.Request.Route)
	b = binary.AppendVarint(b, in.Token.ID)
	b = appendKeyStrings(b, in.Token.Permissions)
	return appendKeyAccount(b, in.Account)
}

// appendKey appends the encoding of every field of in (cacheKey). Its
// tag differs from Input's, so the two kinds of document never share a
// key even under the same kind of question.
func (in scopeInput) appendKey(b []byte) []byte {
	b = append(b, 's')
	return appendKeyAccount(b, in.Account)
}

func appendKeyAccount(b []byte, a AccountInput) []byte {
	b = binary.AppendVarint(b, a.ID)
	b = appendKeyString(b, a.Type)
	b = binary.AppendVarint(b, a.ManagerID)
	b = appendKeyBools(b, a.Active, a.Expired, a.ReadOnly, a.ChainComplete)
	b = appendKeyStrings(b, a.Privileges)
	b = binary.AppendUvarint(b, uint64(len(a.Chain)))
	for _, c := range a.Chain {
		b = binary.AppendVarint(b, c.ID)
		b = appendKeyString(b, c.Type)
		b = appendKeyBools(b, c.Active, c.Expired, c.ReadOnly, false)
	}
	return b
}

// appendKeyBools appends four booleans as the bits of one byte.
func appendKeyBools(b []byte, v0, v1, v2, v3 bool) []byte {
	var x byte
	for i, v := range [4]bool{v0, v1, v2, v3} {
		if v {
			x |= 1 << i
		}
	}
	return append(b, x)
}

func appendKeyString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendKeyStrings(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendKeyString(b, s)
	}
	return b
}

// evalInput is the rego option that passes in as the input document.
func evalInput(in Input) rego.EvalOption { return rego.EvalParsedInput(in.value()) }
