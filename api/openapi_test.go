package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/fleetapi/fleetapi/api"
)

var update = flag.Bool("update", false, "rewrite testdata/openapi.golden.json from the generated document")

const goldenOpenAPI = "testdata/openapi.golden.json"

// openAPIDoc returns the document of a server built without a database
// (as `fleetapi openapi` builds it).
func openAPIDoc(t *testing.T) []byte {
	t.Helper()
	srv, err := api.New(api.Config{})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := srv.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// loadOpenAPI parses and resolves a document as a client would.
func loadOpenAPI(t *testing.T, b []byte) *openapi3.T {
	t.Helper()
	l := openapi3.NewLoader()
	doc, err := l.LoadFromData(b)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return doc
}

// TestOpenAPIGolden pins the document: every change to the contract is a
// reviewed diff of testdata/openapi.golden.json (go test ./api -run
// TestOpenAPIGolden -update rewrites it).
func TestOpenAPIGolden(t *testing.T) {
	got := openAPIDoc(t)
	if *update {
		if err := os.MkdirAll(filepath.Dir(goldenOpenAPI), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenOpenAPI, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenOpenAPI)
	if err != nil {
		t.Fatalf("%v (run go test ./api -run TestOpenAPIGolden -update)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < min(len(gl), len(wl)); i++ {
			if gl[i] != wl[i] {
				t.Fatalf("the OpenAPI document differs from %s from line %d:\n got: %s\nwant: %s\n"+
					"(review the change, then go test ./api -run TestOpenAPIGolden -update)", goldenOpenAPI, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("the OpenAPI document differs from %s in length (%d lines, want %d); rerun with -update after review",
			goldenOpenAPI, len(gl), len(wl))
	}
}

// TestOpenAPIValid validates the document with kin-openapi (OpenAPI 3.1,
// JSON Schema 2020-12, every example against its schema).
func TestOpenAPIValid(t *testing.T) {
	doc := loadOpenAPI(t, openAPIDoc(t))
	if err := doc.Validate(context.Background(), openapi3.EnableExamplesValidation()); err != nil {
		t.Fatalf("invalid OpenAPI document: %v", err)
	}
}

// wantOperations pins the operation id of each route that is not a list
// (the lists are get_<resource>, checked from the descriptors) and of the
// lists published so far: an id must not change, since generated clients
// name their methods after it.
var wantOperations = map[string]string{
	"get_me": "GET /me", "get_services": "GET /services", "get_services_due": "GET /services/due",
	"create_passenger": "POST /passengers", "get_reports": "GET /reports", "get_events": "GET /events",
	"get_event":        "GET /events/{id}",
	"get_notification": "GET /notifications/{id}", "get_notifications_stream": "GET /notifications/stream",
	"get_accounts": "GET /accounts", "create_account": "POST /accounts", "get_account": "GET /accounts/{id}",
	"update_account": "PATCH /accounts/{id}", "erase_account": "DELETE /accounts/{id}", "get_audit_events": "GET /audit-events",
	"get_tokens": "GET /tokens", "create_token": "POST /tokens", "revoke_token": "DELETE /tokens/{id}",
	"get_account_objects": "GET /accounts/{id}/objects", "replace_account_objects": "PUT /accounts/{id}/objects",
	"create_object": "POST /objects",
	"move_object":   "PATCH /objects/{id}",
	"get_usage":     "GET /usage",
	"post_readings": "POST /readings", "get_object_positions": "GET /objects/{id}/positions",
	"get_object":     "GET /objects/{id}",
	"create_webhook": "POST /webhooks", "get_webhook": "GET /webhooks/{id}", "update_webhook": "PATCH /webhooks/{id}",
	"delete_webhook": "DELETE /webhooks/{id}", "rotate_webhook_secret": "POST /webhooks/{id}/rotate-secret",
	"test_webhook": "POST /webhooks/{id}/test", "get_webhook_deliveries": "GET /webhooks/{id}/deliveries",
	"retry_webhook_delivery": "POST /webhooks/{id}/deliveries/{delivery_id}/retry",
	"create_zone":            "POST /zones", "get_zone": "GET /zones/{id}", "update_zone": "PATCH /zones/{id}", "delete_zone": "DELETE /zones/{id}",
	"create_event": "POST /events", "update_event": "PATCH /events/{id}", "delete_event": "DELETE /events/{id}",
	"create_service": "POST /services", "update_service": "PATCH /services/{id}", "delete_service": "DELETE /services/{id}",
	"service_done":  "POST /services/{id}/done",
	"create_report": "POST /reports", "update_report": "PATCH /reports/{id}", "delete_report": "DELETE /reports/{id}",
}

func TestOpenAPIContract(t *testing.T) {
	raw := openAPIDoc(t)
	doc := loadOpenAPI(t, raw)
	if doc.OpenAPI != "3.1.0" || doc.Info.Version != "2.0.0" {
		t.Fatalf("openapi %q, info.version %q", doc.OpenAPI, doc.Info.Version)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != api.BasePath {
		t.Fatalf("servers %v, want one with url %s", doc.Servers, api.BasePath)
	}
	var tags []string
	for _, tg := range doc.Tags {
		if tg.Description == "" {
			t.Errorf("tag %q has no description", tg.Name)
		}
		tags = append(tags, tg.Name)
	}
	wantTags := []string{"System", "Account", "Fleet", "Tracking", "Commands", "Places", "People and groups",
		"Events", "Maintenance", "Sensors", "Reports", "Templates"}
	if !slices.Equal(tags, wantTags) {
		t.Errorf("tags %v, want %v", tags, wantTags)
	}
	scheme := doc.Components.SecuritySchemes["ApiToken"]
	if scheme == nil || scheme.Value.Type != "apiKey" || scheme.Value.In != "header" || scheme.Value.Name != "Authorization" ||
		!strings.Contains(scheme.Value.Description, "Bearer <API_TOKEN>") || !strings.Contains(scheme.Value.Description, "bare") {
		t.Errorf("security scheme ApiToken: %+v", scheme)
	}

	got := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			got[op.OperationID] = method + " " + path
			t.Run(op.OperationID, func(t *testing.T) { checkOperation(t, method, op) })
		}
	}
	// Every operation is a pinned one or the list of a listed resource,
	// named get_<resource> (listRoute): a new list needs no entry here.
	for _, l := range listRoutes {
		resource := strings.TrimPrefix(l.path, api.BasePath+"/")
		if want, ok := wantOperations["get_"+resource]; ok && want != "GET /"+resource {
			t.Errorf("operation get_%s is pinned to %q, the list of %s is GET /%s", resource, want, resource, resource)
		}
		if got["get_"+resource] != "GET /"+resource {
			t.Errorf("the list of %s: operation get_%s is %q, want GET /%s", resource, resource, got["get_"+resource], resource)
		}
		delete(got, "get_"+resource)
	}
	for id, route := range got {
		if _, ok := wantOperations[id]; !ok {
			t.Errorf("operation %s (%s) is neither pinned in wantOperations nor a list", id, route)
		}
	}
	for id, route := range wantOperations {
		if strings.HasPrefix(route, "GET /") && slices.ContainsFunc(listRoutes, func(l listRouteCase) bool {
			return l.path == api.BasePath+strings.TrimPrefix(route, "GET ")
		}) {
			continue // checked above
		}
		if got[id] != route {
			t.Errorf("operation %s is %q, want %q", id, got[id], route)
		}
	}
}

func checkOperation(t *testing.T, method string, op *openapi3.Operation) {
	if op.Security == nil || len(*op.Security) != 1 || (*op.Security)[0]["ApiToken"] == nil {
		t.Errorf("security %v", op.Security)
	}
	if len(op.Tags) != 1 || op.Summary == "" || op.Description == "" {
		t.Errorf("tags %v, summary %q, description %q", op.Tags, op.Summary, op.Description)
	}
	for _, p := range op.Parameters {
		if p.Value.Content != nil {
			// A JSON-valued parameter (an object filter): its schema is in
			// its content, an object.
			mt := p.Value.Content.Get("application/json")
			if p.Value.Schema != nil || len(p.Value.Content) != 1 || mt == nil || !mt.Schema.Value.Type.Is(openapi3.TypeObject) {
				t.Errorf("parameter %s: content %v, schema %v: want one application/json object and no schema", p.Value.Name, p.Value.Content, p.Value.Schema)
			}
			continue
		}
		s := p.Value.Schema.Value
		if p.Value.Description == "" || s.Type == nil || len(s.Type.Slice()) == 0 {
			t.Errorf("parameter %s: description %q, type %v", p.Value.Name, p.Value.Description, s.Type)
		}
		if p.Value.Name == "Accept" {
			t.Errorf("framework parameter Accept")
		}
		// A path parameter has no default to show, so it shows an example.
		if p.Value.In == openapi3.ParameterInPath && p.Value.Example == nil && len(p.Value.Examples) == 0 {
			t.Errorf("path parameter %s: no example", p.Value.Name)
		}
		switch p.Value.Name {
		case "page", "per_page":
			if s.Min == nil || s.Max == nil || s.Default == nil {
				t.Errorf("%s: bounds %v..%v default %v", p.Value.Name, s.Min, s.Max, s.Default)
			}
		case "search":
			if s.MinLength != 2 || s.MaxLength == nil || *s.MaxLength != 100 {
				t.Errorf("search: length %d..%v", s.MinLength, s.MaxLength)
			}
		case "order", "sort":
			if len(s.Enum) == 0 || s.Default == nil {
				t.Errorf("%s: enum %v default %v", p.Value.Name, s.Enum, s.Default)
			}
		case "id":
			if s.Min == nil || *s.Min != 1 || !p.Value.Required {
				t.Errorf("id: minimum %v, required %v", s.Min, p.Value.Required)
			}
		}
	}
	want := []string{"400", "401", "403", "429", "500", "503"}
	switch method {
	case http.MethodPost:
		want = append(want, "201", "409", "413", "415")
		switch op.OperationID {
		case "post_readings", "service_done": // not a create: 200 (readings: each item's outcome)
			want = []string{"400", "401", "403", "429", "500", "503", "200", "413", "415"}
		case "rotate_webhook_secret", "retry_webhook_delivery": // actions without a body on a row: 200
			want = []string{"400", "401", "403", "429", "500", "503", "200"}
		case "test_webhook": // queues a delivery, takes no body: 202
			want = []string{"400", "401", "403", "429", "500", "503", "202"}
		}
	case http.MethodPatch, http.MethodPut:
		want = append(want, "200", "413", "415")
		if slices.Contains([]string{"update_event", "update_service", "update_report"}, op.OperationID) {
			want = append(want, "409") // a name taken by another row
		}
	case http.MethodDelete:
		want = append(want, "204")
	default:
		want = append(want, "200")
	}
	// A route naming an account or row answers 404 outside the scope.
	if slices.Contains([]string{"get_event", "get_notification", "get_account", "create_account", "update_account", "erase_account", "create_token", "revoke_token",
		"get_account_objects", "replace_account_objects", "create_object", "move_object", "get_usage", "get_object_positions", "get_object",
		"create_webhook", "get_webhook", "update_webhook", "delete_webhook", "rotate_webhook_secret", "test_webhook",
		"get_webhook_deliveries", "retry_webhook_delivery", "create_zone", "get_zone", "update_zone", "delete_zone",
		"create_event", "update_event", "delete_event", "create_service", "update_service", "delete_service", "service_done",
		"create_report", "update_report", "delete_report"}, op.OperationID) {
		want = append(want, "404")
	}
	// A write that can find its row in a state that refuses it: 409
	// CONFLICT (an imported webhook made active before its secret is
	// rotated; a delivery retried while it is being sent; a test while
	// one is pending; a zone deleted while event rules name it).
	if slices.Contains([]string{"update_webhook", "retry_webhook_delivery", "test_webhook", "delete_zone"}, op.OperationID) {
		want = append(want, "409")
	}
	slices.Sort(want)
	if got := op.Responses.Keys(); !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		t.Errorf("responses %v, want %v", slices.Sorted(slices.Values(got)), want)
	}
	for code, r := range op.Responses.Map() {
		if code == "204" {
			if len(r.Value.Content) != 0 || r.Value.Headers["X-Request-Id"] == nil {
				t.Errorf("response 204: content %v, headers %v", r.Value.Content, r.Value.Headers)
			}
			continue
		}
		if es := r.Value.Content.Get("text/event-stream"); es != nil && code == "200" && op.OperationID == "get_notifications_stream" {
			// the one stream: Server-Sent Events, their data the list's items
			if len(r.Value.Content) != 1 || es.Example == nil || r.Value.Headers["X-Request-Id"] == nil {
				t.Errorf("response 200 of the stream: content %v, headers %v", r.Value.Content, r.Value.Headers)
			}
			continue
		}
		mt := r.Value.Content.Get("application/json")
		if len(r.Value.Content) != 1 || mt == nil || mt.Schema == nil || mt.Schema.Ref == "" {
			t.Errorf("response %s: content %v", code, r.Value.Content)
			continue
		}
		if mt.Example == nil {
			t.Errorf("response %s: no example", code)
		}
		if r.Value.Headers["X-Request-Id"] == nil {
			t.Errorf("response %s: no X-Request-Id header", code)
		}
		if code >= "400" && !strings.HasSuffix(mt.Schema.Ref, "/ErrorEnvelope") {
			t.Errorf("response %s: schema %s, want the error envelope", code, mt.Schema.Ref)
		}
		if code < "400" {
			data := mt.Schema.Value.Properties["data"]
			if data == nil || data.Ref == "" && (data.Value.Items == nil || data.Value.Items.Ref == "") {
				t.Errorf("response %s: data is not a typed resource", code)
			}
		}
	}
}

// TestOpenAPINoNoise checks that nothing of the framework remains: no
// unused component, no generated description, no XML or wildcard media
// type, no HTTPError.
func TestOpenAPINoNoise(t *testing.T) {
	raw := openAPIDoc(t)
	for _, noise := range []string{"HTTPError", "unknown-interface", "application/xml", "*/*", "Request body for",
		" schema\"", "####", "nullable", "\"Accept\"", "_Array-", "Envelope_"} {
		if bytes.Contains(raw, []byte(noise)) {
			t.Errorf("document contains %q", noise)
		}
	}
	var doc struct {
		Components map[string]map[string]json.RawMessage `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	refs := map[string]bool{}
	for _, m := range regexp.MustCompile(`"\$ref": "#/components/([^/]+)/([^"]+)"`).FindAllSubmatch(raw, -1) {
		refs[string(m[1])+"/"+string(m[2])] = true
	}
	for kind, items := range doc.Components {
		if kind == "securitySchemes" {
			continue
		}
		for name := range items {
			if !refs[kind+"/"+name] {
				t.Errorf("components.%s.%s is never used", kind, name)
			}
		}
	}
}

// TestOpenAPIServed checks GET /api/v2/openapi.json and the docs UI: no
// token, the same document as `fleetapi openapi`, and a docs page whose
// assets come from this server only.
func TestOpenAPIServed(t *testing.T) {
	srv, err := api.New(api.Config{})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	rec := get("/api/v2/openapi.json")
	want, _ := srv.OpenAPI()
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" || !bytes.Equal(rec.Body.Bytes(), want) {
		t.Fatalf("openapi.json: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	page := get("/api/v2/docs")
	if page.Code != http.StatusOK || !strings.HasPrefix(page.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("docs: %d %s", page.Code, page.Header().Get("Content-Type"))
	}
	if csp := page.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "connect-src 'self'") {
		t.Errorf("docs CSP %q", csp)
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(page.Body.String(), -1)
	if len(refs) < 4 {
		t.Fatalf("docs page references %v", refs)
	}
	for _, m := range refs {
		ref := m[1]
		if strings.Contains(ref, ":") || strings.HasPrefix(ref, "/") {
			t.Errorf("docs page references %q: want a path relative to this server", ref)
			continue
		}
		asset := get("/api/v2/" + ref)
		if asset.Code != http.StatusOK || asset.Body.Len() == 0 {
			t.Errorf("%s: status %d", ref, asset.Code)
		}
	}
	for path, code := range map[string]int{"/api/v2/docs/nope.js": 404, "/api/v2/docs/index.html": 404, "/api/v2/docs/": 404} {
		if rec := get(path); rec.Code != code {
			t.Errorf("%s: status %d, want %d", path, rec.Code, code)
		}
	}
}

// TestOpenAPIMeExampleRoutes: the example of GET /me (a token that may do
// everything) lists every operation of the document in
// permissions.routes, and nothing else, so that a new route cannot leave
// the example behind unnoticed.
func TestOpenAPIMeExampleRoutes(t *testing.T) {
	doc := loadOpenAPI(t, openAPIDoc(t))
	var operations []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			operations = append(operations, method+" "+path)
		}
	}
	slices.Sort(operations)
	me := doc.Paths.Value("/me").Get.Responses.Value("200").Value.Content.Get("application/json").Example
	b, err := json.Marshal(me)
	if err != nil {
		t.Fatal(err)
	}
	var ex struct {
		Data struct {
			Permissions struct {
				Routes map[string]bool `json:"routes"`
			} `json:"permissions"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &ex); err != nil {
		t.Fatal(err)
	}
	var routes []string
	for r, allowed := range ex.Data.Permissions.Routes {
		if !allowed {
			t.Errorf("example route %s is false; the example token may do everything", r)
		}
		routes = append(routes, r)
	}
	slices.Sort(routes)
	if !slices.Equal(routes, operations) {
		t.Fatalf("GET /me example routes %v\ndocument operations     %v\n(the example lists tenancy.Routes(): add the route template to tenancy/routes.go, or register the route the template names)", routes, operations)
	}
}
