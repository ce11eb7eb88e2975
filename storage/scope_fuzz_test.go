package storage

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/policy"
)

// FuzzScopeSQL feeds arbitrary condition trees (as JSON) to the translator:
// it must never panic, must either fail with ErrScope or produce SQL whose
// placeholders match its arguments, and must never inline a string value.
func FuzzScopeSQL(f *testing.F) {
	f.Add("services", `{"op":"eq","field":"account_id","value":7}`)
	f.Add("services", `{"op":"and","children":[{"op":"eq","field":"account_id","value":4},{"op":"eq","field":"granted_to","value":9}]}`)
	f.Add("reports", `{"op":"or","children":[{"op":"eq","field":"account_id","value":3},{"op":"eq","field":"manager_id","value":3}]}`)
	f.Add("services", `{"op":"in","field":"imei","value":["x' OR '1'='1","%_\\"]}`)
	f.Add("services", `{"op":"contains","field":"imei","value":"?"}`)
	f.Add("events", `{"op":"not","children":[{"op":"eq","field":"imei","value":"x"}]}`)
	for _, d := range registry { // every declared resource, not only the ones above
		f.Add(string(d.resource), `{"op":"and","children":[{"op":"eq","field":"account_id","value":4},{"op":"eq","field":"granted_to","value":9}]}`)
	}
	f.Fuzz(func(t *testing.T, resource, tree string) {
		var c policy.Condition
		if err := json.Unmarshal([]byte(tree), &c); err != nil {
			return
		}
		sql, args, err := scopeSQL(rawScope{Resource: resource, Where: &c})
		if err != nil {
			if !errors.Is(err, policy.ErrScope) {
				t.Fatalf("error not ErrScope: %v", err)
			}
			return
		}
		if n := strings.Count(sql, "?"); n != len(args) {
			t.Fatalf("%d placeholders, %d args: %s", n, len(args), sql)
		}
		for _, a := range args {
			if s, ok := a.(string); ok && len(s) > 2 && strings.Contains(sql, s) {
				t.Fatalf("value %q inlined in %s", s, sql)
			}
		}
	})
}
