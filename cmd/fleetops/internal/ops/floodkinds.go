package ops

import (
	"bytes"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
)

// kind is one sort of bad request, with the statuses it may get.
type kind struct {
	name  string
	build func() call
	want  []int
}

// base62 are the characters of a token secret.
const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// randomToken returns a well-formed token that no database holds.
func randomToken() string {
	b := make([]byte, 32)
	for i := range b {
		b[i] = base62[rand.IntN(len(base62))]
	}
	return "flt_" + string(b)
}

// badTokenKinds never carry a valid token: each is a failed authentication
// (401) until the address's budget is spent (429), except the requests
// net/http or the router refuse before authentication.
func badTokenKinds() []kind {
	authFail := []int{401, 429}
	huge := bytes.Repeat([]byte("A"), 1<<20)
	malformed := []string{"Basic dXNlcjpwYXNzd29yZA==", "Bearer", "Bearer ", "Bearer flt_short", "flt_" + strings.Repeat("!", 32),
		"Bearer " + strings.Repeat("x", 64), "Token abc", "Bearer flt_" + strings.Repeat("A", 31) + "é"}
	var m atomic.Int64
	return []kind{
		{"unknown token", func() call { return call{method: "GET", path: "/api/v2/services", token: randomToken()} }, authFail},
		{"malformed Authorization", func() call {
			v := malformed[m.Add(1)%int64(len(malformed))]
			return call{method: "GET", path: "/api/v2/me", header: http.Header{"Authorization": {v}}}
		}, authFail},
		{"no Authorization", func() call { return call{method: "GET", path: "/api/v2/reports"} }, authFail},
		{"two Authorization headers", func() call {
			return call{method: "GET", path: "/api/v2/me", header: http.Header{"Authorization": {"Bearer " + randomToken(), "Bearer " + randomToken()}}}
		}, authFail},
		{"40 KiB Authorization header", func() call {
			return call{method: "GET", path: "/api/v2/me", header: http.Header{"Authorization": {"Bearer " + strings.Repeat("x", 40<<10)}}}
		}, []int{431}},
		{"bad JSON, unknown token", func() call {
			return call{method: "POST", path: "/api/v2/passengers", token: randomToken(), body: []byte(`{"passenger_name": `)}
		}, authFail},
		{"1 MiB body, unknown token", func() call {
			return call{method: "POST", path: "/api/v2/passengers", token: randomToken(), body: huge}
		}, authFail},
		{"unknown parameter, unknown token", func() call {
			return call{method: "GET", path: "/api/v2/services?bogus=1&per_page=9999", token: randomToken()}
		}, authFail},
		{"unknown route", func() call { return call{method: "GET", path: "/api/v2/nothing-here", token: randomToken()} }, []int{404}},
	}
}

// malformedKinds carry a valid token (with the server's default limit):
// each is refused by validation (400, 413, 415) or by the token's limit
// (429) after authentication.
func malformedKinds(secret string) []kind {
	huge := []byte(`{"passenger_name": "` + strings.Repeat("A", 1<<20) + `"}`)
	post := func(body []byte, ct string) func() call {
		return func() call {
			return call{method: "POST", path: "/api/v2/passengers", token: secret, body: body, contentType: ct}
		}
	}
	get := func(path string) func() call {
		return func() call { return call{method: "GET", path: path, token: secret} }
	}
	or429 := func(s ...int) []int { return append(s, 429) }
	return []kind{
		{"bad JSON", post([]byte(`{"passenger_name": `), ""), or429(400)},
		{"unknown field", post([]byte(`{"passenger_name": "A", "is_admin": true}`), ""), or429(400)},
		{"wrong type", post([]byte(`{"passenger_name": 42}`), ""), or429(400)},
		{"fails validation", post([]byte(`{"passenger_name": "  ", "passenger_email": "nope"}`), ""), or429(400)},
		{"1 MiB body", post(huge, ""), or429(413)},
		{"text/plain body", post([]byte(`{"passenger_name": "A"}`), "text/plain"), or429(415)},
		{"unknown parameter", get("/api/v2/services?bogus=1"), or429(400)},
		{"per_page out of bounds", get("/api/v2/services?per_page=100000"), or429(400)},
		{"repeated parameter", get("/api/v2/services?page=1&page=2"), or429(400)},
		{"id not a number", get("/api/v2/events/abc"), or429(400, 404)},
	}
}
