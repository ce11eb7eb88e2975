package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// passengerStringFields are the string fields of POST /passengers; every
// body rule is checked in each of them.
var passengerStringFields = []string{
	"passenger_name", "passenger_assign_id", "passenger_idn", "passenger_address",
	"passenger_phone", "passenger_email", "passenger_desc", "passenger_client_id",
}

// passengerFields are all the fields of POST /passengers with a valid JSON
// value each.
var passengerFields = map[string]string{
	"passenger_name": `"Ana"`, "passenger_assign_id": `"K-1"`, "passenger_idn": `"1"`,
	"passenger_address": `"Main St"`, "passenger_phone": `"+1"`, "passenger_email": `"ana@example.com"`,
	"passenger_desc": `"d"`, "passenger_client_id": `"c"`, "passenger_active": `true`,
	"passenger_pickup_point_id": `3`,
}

// bodyWith is a passenger body whose field holds the raw JSON value; a
// name is added when field is not the name.
func bodyWith(field, value string) string {
	if field == "passenger_name" {
		return `{"passenger_name":` + value + `}`
	}
	return `{"passenger_name":"Ana","` + field + `":` + value + `}`
}

// rejects posts body, expects a 400 with code and returns the details.
func (a *testAPI) rejects(t *testing.T, body, code string) map[string]any {
	t.Helper()
	res := a.post(body, demoToken(t, "acme-all"))
	if res.status != http.StatusBadRequest || res.errorCode(t) != code {
		t.Fatalf("body %q: status %d: %s, want 400 %s", body, res.status, res.raw, code)
	}
	details, _ := res.body["error"].(map[string]any)["details"].(map[string]any)
	return details
}

// noRowsWritten fails t when the passengers table changed size since
// before.
func (a *testAPI) noRowsWritten(t *testing.T, before int) {
	t.Helper()
	if after := a.count(t, `SELECT count(*) FROM passengers`); after != before {
		t.Fatalf("a rejected body wrote rows: %d → %d", before, after)
	}
}

// invalidText are string literal contents that are not valid Unicode text:
// every kind of malformed UTF-8, and unpaired UTF-16 surrogate escapes
// (which encoding/json turns into U+FFFD).
var invalidText = map[string]string{
	"lone continuation byte":      "a\x80b",
	"continuation run":            "\xbf\xbf",
	"overlong two bytes":          "\xc0\xaf",
	"overlong three bytes":        "\xe0\x80\xaf",
	"overlong four bytes":         "\xf0\x80\x80\xaf",
	"surrogate encoded in UTF-8":  "\xed\xa0\x80",
	"low surrogate in UTF-8":      "\xed\xbf\xbf",
	"beyond U+10FFFF":             "\xf4\x90\x80\x80",
	"truncated two bytes":         "ab\xc3",
	"truncated three bytes":       "\xe2\x82",
	"truncated four bytes":        "\xf0\x9f\x98",
	"truncated before ASCII":      "\xe2\x82z",
	"byte FF":                     "\xff",
	"byte FE":                     "x\xfe",
	"byte F8":                     "\xf8\x88\x80\x80\x80",
	"lone high surrogate escape":  `\ud800`,
	"lone low surrogate escape":   `\udc00`,
	"high surrogate then letter":  `\ud83dA`,
	"high surrogate then escape":  `\ud83d\u0041`,
	"two high surrogate escapes":  `\ud83d\ud83d`,
	"reversed surrogate escapes":  `\ude00\ud83d`,
	"upper-case surrogate escape": `x\uDBFFy`,
}

func TestPassengerBodyInvalidText(t *testing.T) {
	a := newTestAPI(t)
	before := a.count(t, `SELECT count(*) FROM passengers`)
	for _, field := range passengerStringFields {
		for name, text := range invalidText {
			t.Run(field+"/"+name, func(t *testing.T) {
				details := a.rejects(t, bodyWith(field, `"`+text+`"`), "VALIDATION_FAILED")
				fields, _ := details["fields"].(map[string]any)
				if fields[field] == nil {
					t.Fatalf("details %v: no reason for %s", details, field)
				}
				if r, _ := fields[field].(string); !strings.Contains(r, "UTF") {
					t.Fatalf("reason %q for %s does not name the encoding", r, field)
				}
			})
		}
	}
	t.Run("every failing field is named", func(t *testing.T) {
		details := a.rejects(t, "{\"passenger_name\":\"\xff\",\"passenger_desc\":\"\\ud800\",\"passenger_email\":\"nope\"}", "VALIDATION_FAILED")
		fields, _ := details["fields"].(map[string]any)
		if len(fields) != 3 {
			t.Fatalf("fields %v, want name, desc and email", fields)
		}
	})
	for name, text := range invalidText {
		t.Run("key/"+name, func(t *testing.T) {
			a.rejects(t, `{"passenger_name":"Ana","`+text+`":"x"}`, "INVALID_BODY")
			a.rejects(t, `{"`+text+`passenger_desc":"x","passenger_name":"Ana"}`, "INVALID_BODY")
		})
		t.Run("wrong type/"+name, func(t *testing.T) {
			// A string where a boolean belongs is a wrong type whatever it holds.
			if d := a.rejects(t, bodyWith("passenger_active", `"`+text+`"`), "INVALID_BODY"); d["field"] != "passenger_active" {
				t.Fatalf("details %v", d)
			}
		})
	}
	for name, body := range map[string]string{
		"before the object": "\xff{\"passenger_name\":\"Ana\"}",
		"after the object":  "{\"passenger_name\":\"Ana\"}\xff",
		"between tokens":    "{\"passenger_name\":\xff\"Ana\"}",
		"as a value":        "{\"passenger_name\":\"Ana\",\"passenger_active\":\xff}",
	} {
		t.Run("outside strings/"+name, func(t *testing.T) {
			a.rejects(t, body, "INVALID_BODY")
		})
	}
	a.noRowsWritten(t, before)

	t.Run("valid text is stored byte for byte", func(t *testing.T) {
		text := "Zoë 😀 \u00e9e\u0301 \u05e9\u05dc\u05d5\u05dd \U0010FFFD \uFFFD"
		for _, field := range passengerStringFields {
			value := text
			switch field {
			case "passenger_email":
				value = "zoë@example.com"
			case "passenger_assign_id":
				value = "ZOË-😀-\U0010FFFD"
			}
			body := bodyWith(field, `"`+value+`"`)
			if field != "passenger_name" {
				body = strings.Replace(body, `"Ana"`, `"Ana \ud83d\ude00"`, 1)
			}
			res := a.post(body, demoToken(t, "acme-all"))
			if res.status != http.StatusCreated {
				t.Fatalf("%s: %d %s", field, res.status, res.raw)
			}
			var stored string
			id := res.data(t)["passenger_id"]
			if err := a.db.NewRaw(`SELECT `+field+` FROM passengers WHERE passenger_id = ?`, id).Scan(context.Background(), &stored); err != nil {
				t.Fatal(err)
			}
			if stored != value {
				t.Fatalf("%s stored %q, sent %q", field, stored, value)
			}
		}
	})
}

func TestPassengerBodyKeyCase(t *testing.T) {
	a := newTestAPI(t)
	before := a.count(t, `SELECT count(*) FROM passengers`)
	spellings := map[string]func(string) string{
		"upper": strings.ToUpper,
		"title": func(s string) string { return strings.ToUpper(s[:1]) + s[1:] },
		"last letter upper": func(s string) string {
			return s[:len(s)-1] + strings.ToUpper(s[len(s)-1:])
		},
		"mixed": func(s string) string {
			b := []byte(s)
			for i := range b {
				if i%2 == 1 && b[i] >= 'a' && b[i] <= 'z' {
					b[i] -= 'a' - 'A'
				}
			}
			return string(b)
		},
		// encoding/json also folds the Kelvin sign to k and ſ to s.
		"unicode folding": func(s string) string {
			return strings.NewReplacer("s", "\u017f", "k", "\u212a").Replace(s)
		},
	}
	for field, value := range passengerFields {
		for name, spell := range spellings {
			key := spell(field)
			if key == field {
				continue
			}
			t.Run(field+"/"+name, func(t *testing.T) {
				details := a.rejects(t, bodyWith(key, value), "INVALID_BODY")
				if details["field"] != key {
					t.Fatalf("details %v, want field %q", details, key)
				}
				if field == "passenger_name" {
					return
				}
				// Both spellings: the misspelt one is still unknown, in either order.
				for _, body := range []string{
					`{"passenger_name":"Ana","` + field + `":` + value + `,"` + key + `":` + value + `}`,
					`{"passenger_name":"Ana","` + key + `":` + value + `,"` + field + `":` + value + `}`,
				} {
					if d := a.rejects(t, body, "INVALID_BODY"); d["field"] != key {
						t.Fatalf("body %s: details %v, want field %q", body, d, key)
					}
				}
			})
		}
	}
	t.Run("name in both spellings", func(t *testing.T) {
		for _, body := range []string{
			`{"passenger_name":"Ana","PASSENGER_NAME":"Bob"}`,
			`{"PASSENGER_NAME":"Bob","passenger_name":"Ana"}`,
		} {
			if d := a.rejects(t, body, "INVALID_BODY"); d["field"] != "PASSENGER_NAME" {
				t.Fatalf("body %s: details %v", body, d)
			}
		}
	})
	a.noRowsWritten(t, before)
}

func TestPassengerBodyDuplicateKeys(t *testing.T) {
	a := newTestAPI(t)
	before := a.count(t, `SELECT count(*) FROM passengers`)
	for field, value := range passengerFields {
		t.Run(field, func(t *testing.T) {
			bodies := []string{
				// Same value twice, then different values.
				`{"passenger_name":"Ana","` + field + `":` + value + `,"` + field + `":` + value + `}`,
				`{"` + field + `":` + value + `,"passenger_name":"Ana","` + field + `":null}`,
				`{"` + field + `":null,"` + field + `":` + value + `,"passenger_name":"Ana"}`,
			}
			if field == "passenger_name" {
				bodies = []string{`{"passenger_name":"Ana","passenger_name":"Ana"}`, `{"passenger_name":"Ana","passenger_name":"Bob"}`}
			}
			for _, body := range bodies {
				details := a.rejects(t, body, "INVALID_BODY")
				if details["field"] != field {
					t.Fatalf("body %s: details %v, want field %s", body, details, field)
				}
			}
		})
	}
	t.Run("escaped spelling of the same key", func(t *testing.T) {
		if d := a.rejects(t, `{"passenger_name":"Ana","passenger_\u006eame":"Bob"}`, "INVALID_BODY"); d["field"] != "passenger_name" {
			t.Fatalf("details %v", d)
		}
	})
	t.Run("nested positions", func(t *testing.T) {
		// POST /passengers has no nested fields, so these are wrong types
		// too; the duplicate is found first, wherever it is.
		for body, key := range map[string]string{
			`{"passenger_name":"Ana","passenger_desc":{"a":1,"a":2}}`:                 "passenger_desc.a",
			`{"passenger_name":"Ana","passenger_desc":[{"b":1},{"a":1,"b":2,"a":3}]}`: "passenger_desc[1].a",
			`{"passenger_name":{"x":{"y":1,"y":1}}}`:                                  "passenger_name.x.y",
		} {
			if d := a.rejects(t, body, "INVALID_BODY"); d["field"] != key {
				t.Fatalf("body %s: details %v, want %s", body, d, key)
			}
		}
	})
	a.noRowsWritten(t, before)
}

func TestPassengerAssignIDNFC(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	storedID := func(t *testing.T, res response) string {
		t.Helper()
		var s string
		if err := a.db.NewRaw(`SELECT passenger_assign_id FROM passengers WHERE passenger_id = ?`, res.data(t)["passenger_id"]).Scan(context.Background(), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name, first, again, stored string
	}{
		{"composed then decomposed", "\u00c9-1", "E\u0301-1", "\u00c9-1"},
		{"decomposed then composed", "e\u0301-2", "\u00e9-2", "\u00c9-2"},
		{"lower decomposed then upper composed", "\u0065\u0301\u0327-3", "\u0229\u0301-3", "\u0228\u0301-3"},
		{"combining order", "A\u0323\u0302-4", "A\u0302\u0323-4", "\u1eac-4"},
		{"hangul jamo", "\u1100\u1161-5", "\uac00-5", "\uac00-5"},
		{"angstrom sign", "\u212b-6", "\u00e5-6", "\u00c5-6"},
		// Upper-casing can itself leave a sequence that NFC composes.
		{"dotless i then acute", "\u0131\u0301-8", "\u00cd-8", "\u00cd-8"},
		{"long s then caron", "\u017f\u030c-9", "\u0161-9", "\u0160-9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := a.post(`{"passenger_name":"Ana","passenger_assign_id":"`+tt.first+`"}`, tok)
			if res.status != http.StatusCreated {
				t.Fatalf("first: %d %s", res.status, res.raw)
			}
			if got := storedID(t, res); got != tt.stored {
				t.Fatalf("stored %q (%+q), want %q (%+q)", got, got, tt.stored, tt.stored)
			}
			if got := res.data(t)["passenger_assign_id"]; got != tt.stored {
				t.Fatalf("answered %+q, want %+q", got, tt.stored)
			}
			before := a.count(t, `SELECT count(*) FROM passengers`)
			again := a.post(`{"passenger_name":"Bob","passenger_assign_id":"`+tt.again+`"}`, tok)
			if again.status != http.StatusConflict || again.errorCode(t) != "CONFLICT" {
				t.Fatalf("second spelling: %d %s", again.status, again.raw)
			}
			a.noRowsWritten(t, before)
		})
	}
	t.Run("idempotent replay across normal forms", func(t *testing.T) {
		first := a.post(`{"passenger_name":"Ana","passenger_assign_id":"\u00d1-7"}`, tok, "Idempotency-Key", "nfc-7")
		if first.status != http.StatusCreated {
			t.Fatalf("first: %d %s", first.status, first.raw)
		}
		again := a.post(`{"passenger_name":"Ana","passenger_assign_id":"n\u0303-7"}`, tok, "Idempotency-Key", "nfc-7")
		if again.status != http.StatusCreated || again.header.Get("Idempotent-Replayed") != "true" ||
			again.data(t)["passenger_id"] != first.data(t)["passenger_id"] {
			t.Fatalf("replay: %d %s", again.status, again.raw)
		}
	})
}

// invisibleNames are names with no visible character.
var invisibleNames = map[string]string{
	"zero-width space":          `\u200b`,
	"zero-width non-joiner":     `\u200c`,
	"zero-width joiner":         `\u200d`,
	"word joiner":               `\u2060`,
	"byte order mark":           `\ufeff`,
	"zero-width run":            `\u200b\u200c\u200d\u2060\ufeff`,
	"spaces and zero widths":    ` \u200b \u00a0\u3000\u2060 `,
	"combining acute alone":     `\u0301`,
	"combining marks alone":     `\u0301\u0308\u20dd`,
	"spacing mark alone":        `\u0903`,
	"combining grapheme joiner": `\u034f`,
	"variation selectors":       `\ufe0f\ufe0e`,
	"soft hyphen":               `\u00ad`,
	"bidi marks":                `\u200e\u200f\u202a\u202c\u2066\u2069`,
	"tags":                      `\udb40\udc41\udb40\udc7f`,
	"controls":                  `\u0001\u001f\u007f\u0085\u009f`,
	"line and paragraph sep":    `\u2028\u2029`,
	"hangul fillers":            `\u115f\u1160\u3164\uffa0`,
	"braille blank":             `\u2800`,
	"mongolian vowel separator": `\u180e`,
	"invisible operators":       `\u2061\u2062\u2063\u2064`,
	"ideographic space":         `\u3000`,
	"mixed":                     `\ufeff\u0301 \u200d\t\u2800`,
}

func TestPassengerInvisibleName(t *testing.T) {
	a := newTestAPI(t)
	before := a.count(t, `SELECT count(*) FROM passengers`)
	for name, value := range invisibleNames {
		t.Run(name, func(t *testing.T) {
			details := a.rejects(t, `{"passenger_name":"`+value+`"}`, "VALIDATION_FAILED")
			if fields, _ := details["fields"].(map[string]any); fields["passenger_name"] == nil {
				t.Fatalf("details %v", details)
			}
		})
	}
	a.noRowsWritten(t, before)

	// A name with a visible character is kept; zero-width characters and
	// whitespace are trimmed at the ends only.
	for sent, stored := range map[string]string{
		`\u200bZoe\u200b`:                "Zoe",
		`\ufeff Zoe \u2060\u200d`:        "Zoe",
		`Zo\u200be`:                      "Zo\u200be",
		`\u0301Zoe`:                      "\u0301Zoe",
		`e\u0301`:                        "e\u0301",
		`\u05e9\u200c\u05dc`:             "\u05e9\u200c\u05dc",
		`\ud83d\udc69\u200d\ud83d\udcbb`: "\U0001f469\u200d\U0001f4bb",
		`\u2764\ufe0f`:                   "\u2764\ufe0f",
		`Team \ud83c\udff4\udb40\udc67\udb40\udc62\udb40\udc65\udb40\udc6e\udb40\udc67\udb40\udc7f`: "Team \U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f",
		`\u200e\u05e9\u05dc\u05d5\u05dd`: "\u200e\u05e9\u05dc\u05d5\u05dd",
	} {
		t.Run("visible/"+sent, func(t *testing.T) {
			res := a.post(`{"passenger_name":"`+sent+`"}`, demoToken(t, "acme-all"))
			if res.status != http.StatusCreated {
				t.Fatalf("%d %s", res.status, res.raw)
			}
			if got := res.data(t)["passenger_name"]; got != stored {
				t.Fatalf("stored %+q, want %+q", got, stored)
			}
		})
	}
}
