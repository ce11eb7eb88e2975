package storage

import (
	"context"
	"errors"
	"strings"
	"unicode"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"
)

// SQL spans name their statement's verb (docs/observability.md). bun calls
// every raw statement (db.NewRaw) a SELECT, so a DELETE or an UPDATE
// written raw would be a span and a db.operation named SELECT; and a
// statement sent without a query builder is named by its first word,
// "WITH" for one that starts with a common table expression.
// operationHook gives such statements their own verb.

// operationHook wraps a query hook (bunotel's): the events of raw
// statements, and of statements sent without a query builder, reach it
// with the verb of their SQL (statementOperation) as their operation.
type operationHook struct {
	next bun.QueryHook
}

// BeforeQuery passes the event on.
func (h operationHook) BeforeQuery(ctx context.Context, e *bun.QueryEvent) context.Context {
	return h.next.BeforeQuery(ctx, e)
}

// AfterQuery passes the event on, with the statement's own verb when bun
// does not know it.
func (h operationHook) AfterQuery(ctx context.Context, e *bun.QueryEvent) {
	if _, raw := e.IQuery.(*bun.RawQuery); raw || e.IQuery == nil {
		c := *e
		c.IQuery = namedStatement{query: e.IQuery, op: statementOperation(e.Query)}
		e = &c
	}
	h.next.AfterQuery(ctx, e)
}

// namedStatement is a statement with the verb op: the raw query it was
// sent as, or none (the hook then reads the statement's template).
type namedStatement struct {
	query schema.Query
	op    string
}

var _ schema.Query = namedStatement{}

// errNoQuery makes bunotel read the statement from the event's template.
var errNoQuery = errors.New("storage: a statement sent without a query builder")

// AppendQuery appends the raw query.
func (n namedStatement) AppendQuery(gen schema.QueryGen, b []byte) ([]byte, error) {
	if n.query == nil {
		return nil, errNoQuery
	}
	return n.query.AppendQuery(gen, b)
}

// Operation is the statement's verb.
func (n namedStatement) Operation() string { return n.op }

// GetModel is the raw query's model, if any.
func (n namedStatement) GetModel() schema.Model {
	if n.query == nil {
		return nil
	}
	return n.query.GetModel()
}

// GetTableName is the raw query's table, if any.
func (n namedStatement) GetTableName() string {
	if n.query == nil {
		return ""
	}
	return n.query.GetTableName()
}

// statementOperation is the verb of the SQL statement query, in capitals:
// its first keyword, or for a statement that starts with WITH the first
// of SELECT, INSERT, UPDATE, DELETE, MERGE or VALUES outside the common
// table expressions' parentheses. Comments and quoted text are skipped.
func statementOperation(query string) string {
	depth, first := 0, ""
	for i := 0; i < len(query); {
		c := query[i]
		switch {
		case strings.HasPrefix(query[i:], "--"):
			if j := strings.IndexByte(query[i:], '\n'); j >= 0 {
				i += j
			} else {
				i = len(query)
			}
		case strings.HasPrefix(query[i:], "/*"):
			if j := strings.Index(query[i+2:], "*/"); j >= 0 {
				i += j + 4
			} else {
				i = len(query)
			}
		case c == '\'' || c == '"':
			if j := strings.IndexByte(query[i+1:], c); j >= 0 {
				i += j + 2
			} else {
				i = len(query)
			}
		case c == '(':
			depth++
			i++
		case c == ')':
			depth--
			i++
		case c < 0x80 && (unicode.IsLetter(rune(c)) || c == '_'):
			j := i
			for j < len(query) && query[j] < 0x80 && (unicode.IsLetter(rune(query[j])) || unicode.IsDigit(rune(query[j])) || query[j] == '_') {
				j++
			}
			word := strings.ToUpper(query[i:j])
			switch {
			case first == "":
				if word != "WITH" {
					return word
				}
				first = word
			case depth == 0:
				switch word {
				case "SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "VALUES":
					return word
				}
			}
			i = j
		default:
			i++
		}
	}
	if first == "" {
		return "SQL"
	}
	return first
}
