package policy

import (
	"fmt"
	"strings"
)

// String renders the scope for people: "all rows", "no rows" or its
// condition.
func (s Scope) String() string {
	switch {
	case s.unrestricted:
		return "all rows"
	case s.none:
		return "no rows"
	case s.where == nil:
		return "invalid scope (no condition)"
	}
	return s.where.String()
}

// String renders the condition in an SQL-like notation for people (it is
// not SQL: storage builds the query).
func (c Condition) String() string {
	switch c.Op {
	case OpAnd, OpOr:
		parts := make([]string, len(c.Children))
		for i, ch := range c.Children {
			parts[i] = ch.String()
			if len(ch.Children) > 1 {
				parts[i] = "(" + parts[i] + ")"
			}
		}
		return strings.Join(parts, " "+strings.ToUpper(string(c.Op))+" ")
	case OpNot:
		if len(c.Children) == 1 {
			return "NOT (" + c.Children[0].String() + ")"
		}
	}
	sym := map[Op]string{
		OpEq: "=", OpNe: "<>", OpLt: "<", OpLte: "<=", OpGt: ">", OpGte: ">=",
		OpIn: "IN", OpStartsWith: "STARTS WITH", OpEndsWith: "ENDS WITH", OpContains: "CONTAINS",
	}[c.Op]
	if sym == "" {
		sym = string(c.Op)
	}
	return fmt.Sprintf("%s %s %#v", c.Field, sym, c.Value)
}
