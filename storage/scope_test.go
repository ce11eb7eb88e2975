package storage

import (
	"errors"
	"reflect"
	"testing"

	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/schema"

	"github.com/fleetapi/fleetapi/policy"
)

func eq(field string, v any) policy.Condition {
	return policy.Condition{Op: policy.OpEq, Field: field, Value: v}
}

func TestScopeSQL(t *testing.T) {
	tests := []struct {
		name  string
		scope rawScope
		sql   string
		args  []any
	}{
		{"unrestricted", rawScope{Resource: "services", Unrestricted: true}, "TRUE", nil},
		{"none", rawScope{Resource: "services", None: true}, "FALSE", nil},
		{"user", rawScope{Resource: "services", Where: ptr(eq("account_id", int64(7)))},
			`"s"."account_id" = ?`, []any{int64(7)}},
		{"float id", rawScope{Resource: "reports", Where: ptr(eq("account_id", float64(7)))},
			`"r"."account_id" = ?`, []any{int64(7)}},
		{"manager", rawScope{Resource: "events", Where: &policy.Condition{Op: policy.OpOr, Children: []policy.Condition{
			eq("account_id", int64(3)), eq("manager_id", int64(3))}}},
			`("e"."account_id" = ? OR "e"."account_id" IN (SELECT "owner"."id" FROM "accounts" AS "owner" WHERE "owner"."manager_id" = ?))`,
			[]any{int64(3), int64(3)}},
		{"subaccount services", rawScope{Resource: "services", Where: &policy.Condition{Op: policy.OpAnd, Children: []policy.Condition{
			eq("account_id", int64(4)), eq("granted_to", int64(9))}}},
			`("s"."account_id" = ? AND EXISTS (SELECT 1 FROM "object_grants" AS "grant" WHERE "grant"."subaccount_id" = ? AND "grant"."imei" = "s"."imei"))`,
			[]any{int64(4), int64(9)}},
		{"subaccount reports", rawScope{Resource: "reports", Where: ptr(eq("granted_to", int64(9)))},
			`"r"."imei" <@ ARRAY(SELECT "grant"."imei" FROM "object_grants" AS "grant" WHERE "grant"."subaccount_id" = ?)`,
			[]any{int64(9)}},
		{"in list", rawScope{Resource: "services", Where: &policy.Condition{Op: policy.OpIn, Field: "imei", Value: []any{"a'b", `c\d`}}},
			`"s"."imei" = ANY(?)`, []any{`'{"a''b","c\\d"}'`}},
		{"startswith escapes", rawScope{Resource: "services", Where: &policy.Condition{Op: policy.OpStartsWith, Field: "imei", Value: `1%_\`}},
			`"s"."imei" LIKE ? ESCAPE '\'`, []any{`1\%\_\\%`}},
		{"not", rawScope{Resource: "services", Where: &policy.Condition{Op: policy.OpNot, Children: []policy.Condition{eq("imei", "x")}}},
			`(NOT "s"."imei" = ?)`, []any{"x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sql, args, err := scopeSQL(tt.scope)
			if err != nil {
				t.Fatal(err)
			}
			if sql != tt.sql {
				t.Errorf("sql:\n got %s\nwant %s", sql, tt.sql)
			}
			var fmtArgs []any
			for _, a := range args {
				if arr, ok := a.(*pgdialect.ArrayValue); ok {
					b, err := arr.AppendQuery(schema.NewQueryGen(pgdialect.New()), nil)
					if err != nil {
						t.Fatal(err)
					}
					a = string(b)
				}
				fmtArgs = append(fmtArgs, a)
			}
			if !reflect.DeepEqual(fmtArgs, tt.args) {
				t.Errorf("args: got %#v, want %#v", args, tt.args)
			}
		})
	}
}

func TestScopeSQLFailsClosed(t *testing.T) {
	tests := []struct {
		name  string
		scope rawScope
	}{
		{"zero scope", rawScope{Resource: "services"}},
		{"unknown resource", rawScope{Resource: "tokens", Unrestricted: true}},
		{"both flags", rawScope{Resource: "services", Unrestricted: true, None: true}},
		{"unrestricted with condition", rawScope{Resource: "services", Unrestricted: true, Where: ptr(eq("account_id", int64(1)))}},
		{"unknown column", rawScope{Resource: "services", Where: ptr(eq("__local0__1", int64(1)))}},
		{"column of another table", rawScope{Resource: "services", Where: ptr(eq("reports.account_id", int64(1)))}},
		{"granted_to on passengers", rawScope{Resource: "passengers", Where: ptr(eq("granted_to", int64(1)))}},
		{"wrong value type", rawScope{Resource: "services", Where: ptr(eq("account_id", "1 OR 1=1"))}},
		{"fractional id", rawScope{Resource: "services", Where: ptr(eq("account_id", 1.5))}},
		{"empty and", rawScope{Resource: "services", Where: &policy.Condition{Op: policy.OpAnd}}},
		{"empty in", rawScope{Resource: "services", Where: &policy.Condition{Op: policy.OpIn, Field: "imei", Value: []any{}}}},
		{"virtual ne", rawScope{Resource: "services", Where: &policy.Condition{Op: policy.OpNe, Field: "manager_id", Value: int64(1)}}},
		{"unknown op", rawScope{Resource: "services", Where: &policy.Condition{Op: "regex", Field: "imei", Value: ".*"}}},
		{"like on int", rawScope{Resource: "services", Where: &policy.Condition{Op: policy.OpContains, Field: "account_id", Value: "1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := scopeSQL(tt.scope); !errors.Is(err, policy.ErrScope) {
				t.Fatalf("got %v, want ErrScope", err)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
