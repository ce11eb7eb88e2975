package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/fleetapi/fleetapi/api"
)

// contract is the published OpenAPI document with its router, loaded once
// for the whole test binary.
var contract struct {
	once   sync.Once
	doc    *openapi3.T
	router routers.Router
	err    error
}

func loadContract() (*openapi3.T, routers.Router, error) {
	contract.once.Do(func() {
		srv, err := api.New(api.Config{})
		if err != nil {
			contract.err = err
			return
		}
		raw, err := srv.OpenAPI()
		if err != nil {
			contract.err = err
			return
		}
		contract.doc, contract.err = openapi3.NewLoader().LoadFromData(raw)
		if contract.err != nil {
			return
		}
		contract.router, contract.err = legacy.NewRouter(contract.doc)
	})
	return contract.doc, contract.router, contract.err
}

// checkContract validates a response of the HTTP test suite against the
// OpenAPI document: status (it must be declared for the operation),
// headers and body. A response of a path under /api/v2 that is no
// operation (unknown route, wrong method) must be the error envelope.
// A mismatch fails the test.
func checkContract(t testing.TB, req *http.Request, rec *httptest.ResponseRecorder) {
	t.Helper()
	doc, router, err := loadContract()
	if err != nil {
		t.Fatalf("OpenAPI document: %v", err)
		return
	}
	if req.Method == http.MethodHead || !strings.HasPrefix(req.URL.Path, api.BasePath+"/") {
		return // HEAD has no body; /healthz, /readyz, /metrics are not part of the client API
	}
	// Route on the path alone (httptest requests carry example.com as host).
	probe := req.Clone(context.Background())
	probe.URL.Scheme, probe.URL.Host = "", ""
	route, pathParams, err := router.FindRoute(probe)
	if err == nil && strings.HasSuffix(req.URL.Path, "/") {
		err = errors.New("no route") // the router forgives a trailing slash; the server does not
	}
	if err != nil {
		if rec.Code < 400 {
			return // the OpenAPI document and the docs UI
		}
		var body any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Errorf("contract: %s %s: status %d without a JSON body", req.Method, req.URL, rec.Code)
			return
		}
		schema := doc.Components.Schemas["ErrorEnvelope"].Value
		if err := schema.VisitJSON(body, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("contract: %s %s (no operation): status %d: body is not the error envelope: %v\n%s",
				req.Method, req.URL, rec.Code, err, rec.Body.Bytes())
		}
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: pathParams, Route: route},
		Status:                 rec.Code,
		Header:                 rec.Result().Header, // as sent: rec.Header() also shows headers set after WriteHeader
		Body:                   io.NopCloser(bytes.NewReader(rec.Body.Bytes())),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		var me openapi3.MultiError
		msg := err.Error()
		if errors.As(err, &me) {
			msg = me.Error()
		}
		t.Errorf("contract: %s %s (%s): status %d does not match the OpenAPI document: %s\nbody: %s",
			req.Method, req.URL, route.Operation.OperationID, rec.Code, msg, rec.Body.Bytes())
	}
}

// failures records what checkContract reports instead of failing the test.
type failures struct {
	testing.TB
	msgs []string
}

func (f *failures) Errorf(format string, args ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}
func (f *failures) Fatalf(format string, args ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}

// TestContractCatchesMismatches makes sure the response validation of the
// test suite does fail on responses that differ from the document.
func TestContractCatchesMismatches(t *testing.T) {
	const rid = "0123456789abcdef"
	me := `{"success":true,"data":{"id":3,"username":"acme","email":"ops@acme.example","manager_id":2,"type":"user",` +
		`"active":"true","account_expire":"false","account_expire_dt":"","timezone":"UTC","permissions":{"read_only":false,` +
		`"privileges":["reports"],"token":["*"],"routes":{"GET /me":true}}},"meta":{"request_id":"` + rid + `"}}`
	envelope := `{"success":false,"error":{"code":"NOT_FOUND","message":"no such route"},"meta":{"request_id":"` + rid + `"}}`
	tests := []struct {
		name, method, path string
		status             int
		body               string
		requestID          bool
		want               string // "" when the response matches
	}{
		{"match", "GET", "/api/v2/me", 200, me, true, ""},
		{"missing field", "GET", "/api/v2/me", 200, strings.Replace(me, `"username":"acme",`, "", 1), true, "username"},
		{"extra field", "GET", "/api/v2/me", 200, strings.Replace(me, `"id":3,`, `"id":3,"secret":1,`, 1), true, "secret"},
		{"wrong type", "GET", "/api/v2/me", 200, strings.Replace(me, `"id":3`, `"id":"3"`, 1), true, "id"},
		{"enum", "GET", "/api/v2/me", 200, strings.Replace(me, `"type":"user"`, `"type":"root"`, 1), true, "type"},
		{"undeclared status", "GET", "/api/v2/me", 404, envelope, true, "status"},
		{"no request id header", "GET", "/api/v2/me", 200, me, false, "X-Request-Id"},
		{"error envelope", "GET", "/api/v2/events/7", 404, envelope, true, ""},
		{"bad error code", "GET", "/api/v2/events/7", 404, strings.Replace(envelope, "NOT_FOUND", "GONE", 1), true, "code"},
		{"unknown route envelope", "GET", "/api/v2/nope", 404, envelope, true, ""},
		{"unknown route plain", "GET", "/api/v2/nope", 404, `{"detail":"not found"}`, true, "error envelope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, nil)
			rec := httptest.NewRecorder()
			rec.Header().Set("Content-Type", "application/json")
			if tt.requestID {
				rec.Header().Set("X-Request-Id", rid)
			}
			rec.WriteHeader(tt.status)
			rec.WriteString(tt.body)
			f := &failures{TB: t}
			checkContract(f, req, rec)
			got := strings.Join(f.msgs, "\n")
			switch {
			case tt.want == "" && got != "":
				t.Fatalf("reported a matching response: %s", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Fatalf("want a report naming %q, got %q", tt.want, got)
			}
		})
	}
}
