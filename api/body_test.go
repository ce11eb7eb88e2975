package api

import (
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// bodyTestStop and bodyTestRoute are nested shapes such as the management
// API's bodies will have.
type bodyTestStop struct {
	Name string `json:"name"`
	Seq  int    `json:"seq,omitempty"`
}

type bodyTestBase struct {
	Owner string `json:"owner"`
}

type bodyTestRoute struct {
	bodyTestBase
	Title    string            `json:"title"`
	Stop     *bodyTestStop     `json:"stop"`
	Stops    []bodyTestStop    `json:"stops"`
	Labels   map[string]string `json:"labels"`
	Extra    any               `json:"extra"`
	Raw      json.RawMessage   `json:"raw"`
	At       *time.Time        `json:"at"`
	Plain    string
	Skipped  string `json:"-"`
	internal string
}

func TestDecodeBodyKeys(t *testing.T) {
	ok := []string{
		`{"title":"t","owner":"o","Plain":"p"}`,
		`{"stop":{"name":"a","seq":1},"stops":[{"name":"a"},{"name":"a","seq":2}]}`,
		// Maps, untyped values and self-decoding types take any key once.
		`{"labels":{"A":"1","a":"2"},"extra":{"X":{"x":[{"Y":1,"y":2}]}},"raw":{"K":1,"k":2},"at":"2024-01-02T03:04:05Z"}`,
	}
	for _, body := range ok {
		if _, faults, err := decodeBody[bodyTestRoute](strings.NewReader(body)); err != nil || faults != nil {
			t.Errorf("body %s: faults %v, err %v", body, faults, err)
		}
	}
	tests := []struct{ name, body, field, message string }{
		{"upper top", `{"TITLE":"t"}`, "TITLE", "unknown field"},
		{"title case top", `{"Title":"t"}`, "Title", "unknown field"},
		{"promoted field in upper case", `{"Owner":"o"}`, "Owner", "unknown field"},
		{"untagged field in lower case", `{"plain":"p"}`, "plain", "unknown field"},
		{"skipped field", `{"Skipped":"s"}`, "Skipped", "unknown field"},
		{"unexported field", `{"internal":"s"}`, "internal", "unknown field"},
		{"unexported field in upper case", `{"Internal":"s"}`, "Internal", "unknown field"},
		{"embedded struct by its type name", `{"bodyTestBase":{}}`, "bodyTestBase", "unknown field"},
		{"upper in nested struct", `{"stop":{"NAME":"a"}}`, "stop.NAME", "unknown field"},
		{"folded in nested struct", "{\"stop\":{\"\u017feq\":1}}", "stop.\u017feq", "unknown field"},
		{"upper in slice element", `{"stops":[{"name":"a"},{"Seq":1}]}`, "stops[1].Seq", "unknown field"},
		{"both spellings nested", `{"stop":{"name":"a","Name":"b"}}`, "stop.Name", "unknown field"},
		{"duplicate top", `{"title":"a","title":"a"}`, "title", "duplicate key"},
		{"duplicate escaped", `{"title":"a","\u0074itle":"b"}`, "title", "duplicate key"},
		{"duplicate promoted", `{"owner":"a","title":"","owner":"b"}`, "owner", "duplicate key"},
		{"duplicate nested struct", `{"stop":{"seq":1,"name":"a","seq":2}}`, "stop.seq", "duplicate key"},
		{"duplicate in slice element", `{"stops":[{"name":"a"},{"name":"b","name":"c"}]}`, "stops[1].name", "duplicate key"},
		{"duplicate in map", `{"labels":{"a":"1","a":"2"}}`, "labels.a", "duplicate key"},
		{"duplicate in any", `{"extra":[1,{"z":{"q":1,"q":1}}]}`, "extra[1].z.q", "duplicate key"},
		{"duplicate in raw message", `{"raw":{"k":1,"k":1}}`, "raw.k", "duplicate key"},
		{"duplicate in unknown-typed value", `{"title":{"k":1,"k":1}}`, "title.k", "duplicate key"},
		{"wrong type nested", `{"stop":{"seq":"1"}}`, "stop.seq", "wrong type"},
		{"wrong type in slice", `{"stops":[{"name":1}]}`, "stops.name", "wrong type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, _, err := decodeBody[bodyTestRoute](strings.NewReader(tt.body))
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalidBody || v.internal != "" {
				t.Fatalf("err %v, want INVALID_BODY", err)
			}
			if e.Details["field"] != tt.field || !strings.Contains(e.Message, tt.message) {
				t.Fatalf("message %q details %v, want %s of %q", e.Message, e.Details, tt.message, tt.field)
			}
		})
	}
}

func TestDecodeBodyText(t *testing.T) {
	tests := []struct {
		name, body string
		want       textFaults
	}{
		{"nested struct", "{\"stop\":{\"name\":\"\xc0\xaf\"}}", textFaults{"stop.name": reasonNotUTF8}},
		{"slice", "{\"stops\":[{\"name\":\"ok\"},{\"name\":\"\\udfff\"}]}", textFaults{"stops[1].name": reasonSurrogate}},
		{"map value", "{\"labels\":{\"k\":\"\xed\xa0\x80\"}}", textFaults{"labels.k": reasonNotUTF8}},
		{"deep any", "{\"extra\":{\"a\":[\"\\u0000\"]}}", textFaults{"extra.a[0]": reasonNULInValue}},
		{"several", "{\"title\":\"\xff\",\"owner\":\"\\ud800x\",\"Plain\":\"a\\u0000\"}",
			textFaults{"title": reasonNotUTF8, "owner": reasonSurrogate, "Plain": reasonNULInValue}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, faults, err := decodeBody[bodyTestRoute](strings.NewReader(tt.body))
			if err != nil || !maps.Equal(faults, tt.want) {
				t.Fatalf("faults %v err %v, want %v", faults, err, tt.want)
			}
		})
	}
	// Escapes that are text: pairs, escaped backslashes before a u, and
	// surrogate-looking text that is not an escape.
	for lit, want := range map[string]string{
		`\ud83d\ude00`:      "\U0001f600",
		`\uD83D\uDE00`:      "\U0001f600",
		`\\ud800`:           `\ud800`,
		`\\\ud83d\ude00`:    "\\\U0001f600",
		`\"\ud83d\ude00\"`:  "\"\U0001f600\"",
		`ud800`:             "ud800",
		`\u00e9\ufffd`:      "\u00e9\ufffd",
		"\ufffd \U0010ffff": "\ufffd \U0010ffff",
		`\ud7ff\ue000`:      "\ud7ff\ue000",
	} {
		v, faults, err := decodeBody[bodyTestRoute](strings.NewReader(`{"title":"` + lit + `"}`))
		if err != nil || faults != nil || v.Title != want {
			t.Errorf("%s: %+q faults %v err %v, want %+q", lit, v.Title, faults, err, want)
		}
	}
	// A key that is not text is never a field: INVALID_BODY without one.
	for _, key := range []string{"ti\xfftle", `\udc00`, `a\u0000`} {
		_, _, err := decodeBody[bodyTestRoute](strings.NewReader(`{"stop":{"` + key + `":1}}`))
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidBody || !strings.Contains(e.Message, "key is not valid text") {
			t.Errorf("key %q: %v", key, err)
		}
	}
}

func TestDecodeBodyShape(t *testing.T) {
	for body, message := range map[string]string{
		``:                          "must be a JSON object",
		`null`:                      "must be a JSON object",
		`[]`:                        "must be a JSON object",
		"\ufeff{}":                  "must be a JSON object",
		`{"title":"a"`:              "not valid JSON",
		`{"title":"a",}`:            "not valid JSON",
		`{"title" "a"}`:             "not valid JSON",
		`{"stops":[{"name":"a"},]}`: "not valid JSON",
		`{"title":"a"}}`:            "unexpected data",
		`{"title":"a"} {}`:          "unexpected data",
		"{\"title\":\"a\"}\xff":     "unexpected data",
		"{\"title\":\xff\"a\"}":     "not valid JSON",
		"{\"title\":\"a\nb\"}":      "not valid JSON",
	} {
		_, _, err := decodeBody[bodyTestRoute](strings.NewReader(body))
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidBody || !strings.Contains(e.Message, message) {
			t.Errorf("body %q: %v, want INVALID_BODY %q", body, err, message)
		}
	}
	t.Run("too large", func(t *testing.T) {
		r := http.MaxBytesReader(httptest.NewRecorder(), io.NopCloser(strings.NewReader(`{"title":"abc"}`)), 4)
		_, _, err := decodeBody[bodyTestRoute](r)
		var tooLarge *http.MaxBytesError
		if !errors.As(err, &tooLarge) {
			t.Fatalf("err %v, want *http.MaxBytesError", err)
		}
	})
}
