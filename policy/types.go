// Package policy decides who may do what. It embeds the Rego policy set
// (policy/rego), prepares its queries once per policy revision, and answers
// two questions: Decide (may this principal call this route?) and Scope
// (which rows of a resource may it see, as a condition tree that storage
// turns into SQL). It also keeps the decision log and explains decisions.
package policy

import (
	"time"

	"github.com/fleetapi/fleetapi/tenancy"
)

// Input is the document the policy reads (DESIGN §6; JSON Schema in
// rego/schemas/input.json).
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
	// that manager's manager, ...): their state flows down (DESIGN §2).
	Chain []AncestorInput `json:"chain"`
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

// Decision is the answer of data.fleet.authz.decision.
type Decision struct {
	Allow   bool           `json:"allow"`
	Code    string         `json:"code,omitempty"`
	Message string         `json:"message,omitempty"`
	Details map[string]any `json:"details,omitempty"`
}

// Op is the operator of a Condition node.
type Op string

// The operators of a condition tree. And, Or and Not are compounds over
// Children; the others compare Field with Value.
const (
	OpAnd        Op = "and"
	OpOr         Op = "or"
	OpNot        Op = "not"
	OpEq         Op = "eq"
	OpNe         Op = "ne"
	OpLt         Op = "lt"
	OpLte        Op = "lte"
	OpGt         Op = "gt"
	OpGte        Op = "gte"
	OpIn         Op = "in"
	OpStartsWith Op = "startswith"
	OpEndsWith   Op = "endswith"
	OpContains   Op = "contains"
)

// Condition is one node of a row-scope condition tree, compiled from the
// policy's UCAST output. Field is the column name without the resource
// prefix ("account_id", "manager_id", "granted_to").
type Condition struct {
	Op       Op          `json:"op"`
	Field    string      `json:"field,omitempty"`
	Value    any         `json:"value,omitempty"`
	Children []Condition `json:"children,omitempty"`
}

// RowScope is the compiled scope of one resource for one principal.
// Exactly one of these holds: Unrestricted (every row), None (no row), or
// Where is the condition a row must meet.
type RowScope struct {
	Resource     string
	Unrestricted bool
	None         bool
	Where        *Condition
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
		},
	}
}
