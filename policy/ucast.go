package policy

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// fieldOp maps a UCAST field operator to a Condition operator.
func fieldOp(op string) (Op, bool) {
	switch op {
	case "eq":
		return OpEq, true
	case "ne":
		return OpNe, true
	case "lt":
		return OpLt, true
	case "lte", "le":
		return OpLte, true
	case "gt":
		return OpGt, true
	case "gte", "ge":
		return OpGte, true
	case "in":
		return OpIn, true
	case "startswith":
		return OpStartsWith, true
	case "endswith":
		return OpEndsWith, true
	case "contains":
		return OpContains, true
	}
	return "", false
}

// maxExactFloat is 2^53: from there on a float64 no longer holds every
// integer exactly.
const maxExactFloat = 1 << 53

// conditionFromUCAST turns one UCAST node of resource into a Condition.
// Fields must be "<resource>.<column>" with a plain column name; values
// must be scalars (or a list of scalars for "in"). Anything else, including
// field references and nulls, is an error.
func conditionFromUCAST(resource string, node map[string]any) (Condition, error) {
	typ, _ := node["type"].(string)
	op, _ := node["operator"].(string)
	switch typ {
	case "compound":
		children, ok := node["value"].([]any)
		if !ok || len(children) == 0 {
			return Condition{}, fmt.Errorf("compound %q without operands", op)
		}
		c := Condition{Children: make([]Condition, 0, len(children))}
		switch op {
		case "and":
			c.Op = OpAnd
		case "or":
			c.Op = OpOr
		case "not":
			if len(children) != 1 {
				return Condition{}, fmt.Errorf("not with %d operands", len(children))
			}
			c.Op = OpNot
		default:
			return Condition{}, fmt.Errorf("unknown compound operator %q", op)
		}
		for _, child := range children {
			m, ok := child.(map[string]any)
			if !ok {
				return Condition{}, fmt.Errorf("operand of %q is %T", op, child)
			}
			cc, err := conditionFromUCAST(resource, m)
			if err != nil {
				return Condition{}, err
			}
			c.Children = append(c.Children, cc)
		}
		return c, nil
	case "field":
		cop, ok := fieldOp(op)
		if !ok {
			return Condition{}, fmt.Errorf("unknown operator %q", op)
		}
		field, err := column(resource, node["field"])
		if err != nil {
			return Condition{}, err
		}
		value, err := scalar(node["value"], cop == OpIn)
		if err != nil {
			return Condition{}, fmt.Errorf("field %q: %w", field, err)
		}
		return Condition{Op: cop, Field: field, Value: value}, nil
	default:
		return Condition{}, fmt.Errorf("unknown node type %q", typ)
	}
}

// column checks "<resource>.<column>" and returns the column.
func column(resource string, f any) (string, error) {
	s, _ := f.(string)
	col, ok := strings.CutPrefix(s, resource+".")
	if !ok {
		return "", fmt.Errorf("field %q is not a column of %s", s, resource)
	}
	if !isIdentifier(col) {
		return "", fmt.Errorf("field %q is not a plain column name", s)
	}
	return col, nil
}

// isIdentifier: a lower-case SQL identifier, [a-z_][a-z0-9_]*, that is
// not one of OPA's generated names (__local0__ and the like).
func isIdentifier(s string) bool {
	if s == "" || strings.HasPrefix(s, "__") {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// scalar converts a UCAST value; integral numbers become int64.
func scalar(v any, list bool) (any, error) {
	if list {
		items, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("operator in needs a list, got %T", v)
		}
		out := make([]any, len(items))
		for i, it := range items {
			x, err := scalar(it, false)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	}
	switch v := v.(type) {
	case string, bool:
		return v, nil
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n, nil
		}
		f, err := v.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %s: %w", v, err)
		}
		return number(f)
	case float64:
		return number(v)
	case int64:
		return v, nil
	case int:
		return int64(v), nil
	case map[string]any:
		return nil, fmt.Errorf("compares with another column (%v)", v["field"])
	case nil:
		return nil, fmt.Errorf("compares with null")
	default:
		return nil, fmt.Errorf("unsupported value %T", v)
	}
}

// number keeps fractions as float64 and turns integral values into int64;
// an integral value beyond 2^53 may already have lost precision and is an
// error rather than a silently different id.
func number(f float64) (any, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("number %v", f)
	}
	if f != math.Trunc(f) {
		return f, nil
	}
	if math.Abs(f) >= maxExactFloat {
		return nil, fmt.Errorf("integer %v at or beyond 2^53 may have lost precision", f)
	}
	return int64(f), nil
}
