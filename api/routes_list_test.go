package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/tenancy"
)

// TestRegisteredRoutesAreTenancyRoutes: the routes the server registers
// (as its OpenAPI document lists them) are exactly tenancy.Routes(), the
// list the permission grammar checks tokens against, and each of those
// answers (401 without a token) instead of 404/405. A route added to the
// server but not to the list, or the other way round, fails here.
func TestRegisteredRoutesAreTenancyRoutes(t *testing.T) {
	a := newTestAPI(t)
	doc, err := a.srv.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	var registered []string
	for path, ops := range d.Paths {
		for method := range ops {
			switch m := strings.ToUpper(method); m {
			case "GET", "POST", "PUT", "PATCH", "DELETE":
				registered = append(registered, m+" "+path)
			}
		}
	}
	var listed []string
	for _, r := range tenancy.Routes() {
		listed = append(listed, r.String())
		path := r.Template
		if strings.Contains(path, "{") {
			path = strings.NewReplacer("{id}", "12", "{delivery_id}", "13").Replace(path)
		}
		res := a.do(r.Method, api.BasePath+path, nil)
		if res.status != http.StatusUnauthorized {
			t.Errorf("%s (%s): %d %s, want 401 from a registered route", r, path, res.status, res.raw)
		}
	}
	slices.Sort(registered)
	slices.Sort(listed)
	if !slices.Equal(registered, listed) {
		t.Fatalf("registered routes %v\ntenancy.Routes()  %v", registered, listed)
	}
}

// TestMeExampleNamesEveryRoute: the documented example of GET /me shows
// the permissions of a user whose token grants everything, so its
// permissions.routes names every route of tenancy.Routes(), each allowed.
// The example is written by hand (openapi_examples.go): a route added
// without it fails here instead of being documented as missing.
func TestMeExampleNamesEveryRoute(t *testing.T) {
	a := newTestAPI(t)
	doc, err := a.srv.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	var op struct {
		Responses map[string]struct {
			Content map[string]struct {
				Example struct {
					Data struct {
						Permissions struct {
							Routes map[string]bool `json:"routes"`
						} `json:"permissions"`
					} `json:"data"`
				} `json:"example"`
			} `json:"content"`
		} `json:"responses"`
	}
	if err := json.Unmarshal(d.Paths["/me"]["get"], &op); err != nil {
		t.Fatal(err)
	}
	got := op.Responses["200"].Content["application/json"].Example.Data.Permissions.Routes
	var names, want []string
	for r, allowed := range got {
		names = append(names, r)
		if !allowed {
			t.Errorf("the /me example shows %s not allowed; the example user's token grants everything", r)
		}
	}
	for _, r := range tenancy.Routes() {
		want = append(want, r.String())
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("the /me example's permissions.routes name %v\ntenancy.Routes()                          %v", names, want)
	}
}
