package api

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
)

func TestMergeExtra(t *testing.T) {
	tests := []struct {
		name  string
		named string
		extra map[string]any
		want  string
	}{
		{"none", `{"a":1}`, nil, `{"a":1}`},
		{"appended_in_key_order", `{"a":1}`, map[string]any{"z": "x", "b": []any{1.0}}, `{"a":1,"b":[1],"z":"x"}`},
		{"named_wins", `{"name":"Oil","odo":true}`, map[string]any{"name": "no", "odo": false, "shop": "A"}, `{"name":"Oil","odo":true,"shop":"A"}`},
		{"key_inside_a_value_is_not_a_key", `{"name":"x\",\"shop\":1"}`, map[string]any{"shop": "A"}, `{"name":"x\",\"shop\":1","shop":"A"}`},
		{"value_equal_to_key", `{"name":"shop"}`, map[string]any{"shop": 2.0}, `{"name":"shop","shop":2}`},
		{"empty_object", `{}`, map[string]any{"k": nil}, `{"k":null}`},
		{"escaped_key", `{"a":1}`, map[string]any{"x\"y": 1.0}, `{"a":1,"x\"y":1}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mergeExtra([]byte(tc.named), tc.extra)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestServiceJSONMatchesMap: the merged encoding decodes to the same
// object as merging the named fields and the extras as maps.
func TestServiceJSONMatchesMap(t *testing.T) {
	for i, s := range benchServices(20) {
		s.Extra = storage.JSONObject{"workshop": "Main depot", "name": "never", "odo_last": "never", "n": float64(i)}
		b, err := json.Marshal(Service{s})
		if err != nil {
			t.Fatal(err)
		}
		var got, want map[string]any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		named, _ := json.Marshal(s)
		_ = json.Unmarshal(named, &want)
		for k, v := range s.Extra {
			if _, taken := want[k]; !taken {
				want[k] = v
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v\nwant %v", got, want)
		}
	}
}
