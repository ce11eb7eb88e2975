package policy

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func ucastNode(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConditionFromUCAST(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want Condition
	}{
		{"eq_int", `{"type":"field","field":"services.account_id","operator":"eq","value":42}`,
			Condition{Op: OpEq, Field: "account_id", Value: int64(42)}},
		{"float_kept", `{"type":"field","field":"services.x","operator":"gt","value":1.5}`,
			Condition{Op: OpGt, Field: "x", Value: 1.5}},
		{"aliases", `{"type":"compound","operator":"and","value":[
			{"type":"field","field":"services.a","operator":"ge","value":1},
			{"type":"field","field":"services.b","operator":"le","value":2},
			{"type":"field","field":"services.c","operator":"ne","value":true}]}`,
			Condition{Op: OpAnd, Children: []Condition{
				{Op: OpGte, Field: "a", Value: int64(1)}, {Op: OpLte, Field: "b", Value: int64(2)}, {Op: OpNe, Field: "c", Value: true}}}},
		{"in_list", `{"type":"field","field":"services.imei","operator":"in","value":["a",2]}`,
			Condition{Op: OpIn, Field: "imei", Value: []any{"a", int64(2)}}},
		{"not_or", `{"type":"compound","operator":"not","value":[{"type":"compound","operator":"or","value":[
			{"type":"field","field":"services.imei","operator":"startswith","value":"35"},
			{"type":"field","field":"services.name","operator":"contains","value":"oil"}]}]}`,
			Condition{Op: OpNot, Children: []Condition{{Op: OpOr, Children: []Condition{
				{Op: OpStartsWith, Field: "imei", Value: "35"}, {Op: OpContains, Field: "name", Value: "oil"}}}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := conditionFromUCAST("services", ucastNode(t, c.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %#v\nwant %#v", got, c.want)
			}
		})
	}
}

func TestConditionFromUCASTRejects(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"other_table":     {`{"type":"field","field":"reports.account_id","operator":"eq","value":1}`, "not a column of services"},
		"no_table":        {`{"type":"field","field":"account_id","operator":"eq","value":1}`, "not a column of services"},
		"nested":          {`{"type":"field","field":"services.extra.x","operator":"eq","value":1}`, "not a plain column"},
		"local_var":       {`{"type":"field","field":"services.__local0__1","operator":"eq","value":1}`, "not a plain column"},
		"upper":           {`{"type":"field","field":"services.Account","operator":"eq","value":1}`, "not a plain column"},
		"operator":        {`{"type":"field","field":"services.a","operator":"like","value":"x"}`, "unknown operator"},
		"compound_op":     {`{"type":"compound","operator":"xor","value":[{"type":"field","field":"services.a","operator":"eq","value":1}]}`, "unknown compound"},
		"empty_and":       {`{"type":"compound","operator":"and","value":[]}`, "without operands"},
		"not_two":         {`{"type":"compound","operator":"not","value":[{"type":"field","field":"services.a","operator":"eq","value":1},{"type":"field","field":"services.a","operator":"eq","value":1}]}`, "not with 2"},
		"operand_type":    {`{"type":"compound","operator":"or","value":[1]}`, "operand"},
		"node_type":       {`{"type":"document","operator":"exists","value":"x"}`, "unknown node type"},
		"field_ref":       {`{"type":"field","field":"services.a","operator":"eq","value":{"field":"services.b"}}`, "another column"},
		"null":            {`{"type":"field","field":"services.a","operator":"eq","value":null}`, "null"},
		"in_scalar":       {`{"type":"field","field":"services.a","operator":"in","value":1}`, "needs a list"},
		"in_nested":       {`{"type":"field","field":"services.a","operator":"in","value":[[1]]}`, "unsupported value"},
		"precision":       {`{"type":"field","field":"services.a","operator":"eq","value":9007199254740993}`, "2^53"},
		"deep_child_fail": {`{"type":"compound","operator":"and","value":[{"type":"field","field":"services.a","operator":"eq","value":1},{"type":"field","field":"x.a","operator":"eq","value":1}]}`, "not a column"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := conditionFromUCAST("services", ucastNode(t, c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestScalarNumbers(t *testing.T) {
	for _, c := range []struct {
		in   any
		want any
	}{
		{json.Number("42"), int64(42)}, {json.Number("1.5"), 1.5}, {json.Number("4e2"), int64(400)},
		{float64(7), int64(7)}, {int64(3), int64(3)}, {int(5), int64(5)},
	} {
		got, err := scalar(c.in, false)
		if err != nil || got != c.want {
			t.Errorf("scalar(%#v) = %#v, %v; want %#v", c.in, got, err, c.want)
		}
	}
	if _, err := scalar(json.Number("1e400"), false); err == nil {
		t.Error("1e400 accepted")
	}
}

// FuzzConditionFromUCAST: the translator never panics, and whatever it
// accepts names only plain columns of the resource.
func FuzzConditionFromUCAST(f *testing.F) {
	f.Add(`{"type":"field","field":"services.account_id","operator":"eq","value":42}`)
	f.Add(`{"type":"compound","operator":"or","value":[{"type":"field","field":"services.account_id","operator":"eq","value":7},{"type":"field","field":"services.manager_id","operator":"eq","value":7}]}`)
	f.Add(`{"type":"compound","operator":"not","value":[{"type":"field","field":"services.imei","operator":"in","value":["a"]}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) != nil {
			return
		}
		c, err := conditionFromUCAST("services", m)
		if err != nil {
			return
		}
		var walk func(Condition)
		walk = func(c Condition) {
			if len(c.Children) == 0 && !isIdentifier(c.Field) {
				t.Fatalf("accepted field %q in %s", c.Field, s)
			}
			for _, ch := range c.Children {
				walk(ch)
			}
		}
		walk(c)
	})
}
