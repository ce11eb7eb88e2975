package policy

import (
	"encoding/json"
	"strconv"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

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
		ast.Item(ast.InternedTerm("account"), ast.ObjectTerm(
			ast.Item(ast.InternedTerm("id"), intTerm(in.Account.ID)),
			ast.Item(ast.InternedTerm("type"), ast.StringTerm(in.Account.Type)),
			ast.Item(ast.InternedTerm("manager_id"), intTerm(in.Account.ManagerID)),
			ast.Item(ast.InternedTerm("active"), ast.BooleanTerm(in.Account.Active)),
			ast.Item(ast.InternedTerm("expired"), ast.BooleanTerm(in.Account.Expired)),
			ast.Item(ast.InternedTerm("read_only"), ast.BooleanTerm(in.Account.ReadOnly)),
			ast.Item(ast.InternedTerm("privileges"), stringsTerm(in.Account.Privileges)),
			ast.Item(ast.InternedTerm("chain"), chainTerm(in.Account.Chain)),
		)),
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
// the whole input document. Any change to any field is another key.
func (e *Engine) cacheKey(kind, arg string, in Input) (string, error) {
	doc, err := json.Marshal(in)
	if err != nil {
		return "", err
	}
	b := make([]byte, 0, len(kind)+len(arg)+len(e.revision)+len(doc)+3)
	b = append(b, kind...)
	b = append(b, 0)
	b = append(b, arg...)
	b = append(b, 0)
	b = append(b, e.revision...)
	b = append(b, 0)
	b = append(b, doc...)
	return string(b), nil
}

// evalInput is the rego option that passes in as the input document.
func evalInput(in Input) rego.EvalOption { return rego.EvalParsedInput(in.value()) }
