package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/oapi-codegen/nullable"
	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/fleetapi/fleetapi/client"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
)

// sameDay reports whether the nullable date n holds day.
func sameDay(n nullable.Nullable[openapi_types.Date], day openapi_types.Date) bool {
	v, err := n.Get()
	return err == nil && v.Equal(day.Time)
}

// token returns the secret of a demo token (demodata.Tokens).
func token(t *testing.T, name string) string {
	t.Helper()
	for _, d := range demodata.Tokens() {
		if d.Name == name {
			return d.Secret
		}
	}
	t.Fatalf("no demo token %q", name)
	return ""
}

// clients makes generated clients of the server at origin, each sending one
// Authorization header value, and validating every response against the
// OpenAPI document.
type clients struct {
	t    *testing.T
	base string
	http *http.Client
}

func (c clients) with(authorization string) *client.ClientWithResponses {
	c.t.Helper()
	opts := []client.ClientOption{client.WithHTTPClient(c.http)}
	if authorization != "" {
		opts = append(opts, client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", authorization)
			return nil
		}))
	}
	cl, err := client.NewClientWithResponses(c.base, opts...)
	if err != nil {
		c.t.Fatal(err)
	}
	return cl
}

func (c clients) bearer(name string) *client.ClientWithResponses {
	return c.with("Bearer " + token(c.t, name))
}

// failure checks an error response decoded into the error envelope: its
// status, code, and meta.request_id equal to X-Request-Id.
func failure(t *testing.T, hr *http.Response, env *client.ErrorEnvelope, status int, code client.ErrorCode) {
	t.Helper()
	if hr.StatusCode != status {
		t.Fatalf("status %d, want %d", hr.StatusCode, status)
	}
	if env == nil {
		t.Fatalf("status %d: the error envelope was not decoded", status)
	}
	if env.Success || env.Error.Code != code || env.Error.Message == "" {
		t.Fatalf("error %+v, want code %s", env.Error, code)
	}
	if env.Meta.RequestId == "" || env.Meta.RequestId != hr.Header.Get("X-Request-Id") {
		t.Fatalf("meta.request_id %q, X-Request-Id %q", env.Meta.RequestId, hr.Header.Get("X-Request-Id"))
	}
}

func ptr[T any](v T) *T { return &v }

// camel is a snake_case name as oapi-codegen spells it in Go: "audit_events"
// is "AuditEvents".
func camel(s string) string {
	var b strings.Builder
	for _, part := range strings.Split(s, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// TestGeneratedClient drives every operation of the OpenAPI document
// through the generated client against the real server, successes and
// errors alike.
func TestGeneratedClient(t *testing.T) {
	origin := startServer(t)
	transport := newValidatingTransport(t)
	c := clients{t: t, base: origin + "/api/v2", http: &http.Client{Transport: transport}}
	t.Cleanup(func() {
		if missing := transport.unexercised(); len(missing) > 0 {
			t.Errorf("operations of the document not driven through the client: %v", missing)
		}
	})
	ctx := context.Background()
	acme := c.bearer("acme-all")

	t.Run("get_me", func(t *testing.T) {
		r, err := acme.GetMeWithResponse(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r.JSON200 == nil || !r.JSON200.Success || r.JSON200.Data.Username != "acme" || r.JSON200.Data.Type != client.AccountTypeUser {
			t.Fatalf("GET /me: %d %s", r.StatusCode(), r.Body)
		}
		if !r.JSON200.Data.Permissions.Routes["POST /passengers"] {
			t.Fatalf("permissions %+v", r.JSON200.Data.Permissions)
		}
		// The bare token form of the Authorization header.
		bare, err := c.with(token(t, "acme-all")).GetMeWithResponse(ctx)
		if err != nil || bare.JSON200 == nil || bare.JSON200.Data.Id != r.JSON200.Data.Id {
			t.Fatalf("bare token: %v %d %s", err, bare.StatusCode(), bare.Body)
		}
	})
	t.Run("get_me_401", func(t *testing.T) {
		for _, tt := range []struct {
			auth string
			code client.ErrorCode
		}{
			{"", client.ErrorCodeAUTHREQUIRED},
			{"Bearer flt_nope", client.ErrorCodeINVALIDTOKEN},
			{"Bearer " + token(t, "acme-expired"), client.ErrorCodeTOKENEXPIRED},
		} {
			r, err := c.with(tt.auth).GetMeWithResponse(ctx)
			if err != nil {
				t.Fatal(err)
			}
			failure(t, r.HTTPResponse, r.JSON401, http.StatusUnauthorized, tt.code)
		}
	})

	t.Run("get_services", func(t *testing.T) {
		r, err := acme.GetServicesWithResponse(ctx, &client.GetServicesParams{
			PerPage: ptr(int32(2)), Sort: ptr(client.GetServicesParamsSortName), Order: ptr(client.GetServicesParamsOrderDesc)})
		if err != nil {
			t.Fatal(err)
		}
		if r.JSON200 == nil || len(r.JSON200.Data) == 0 || len(r.JSON200.Data) > 2 || r.JSON200.Meta.PerPage != 2 ||
			r.JSON200.Meta.Total < int64(len(r.JSON200.Data)) {
			t.Fatalf("GET /services: %d %s", r.StatusCode(), r.Body)
		}
		if d := r.JSON200.Data; len(d) == 2 && d[0].Name < d[1].Name {
			t.Fatalf("not sorted by name, descending: %q, %q", d[0].Name, d[1].Name)
		}
		imei := r.JSON200.Data[0].Imei
		f, err := acme.GetServicesWithResponse(ctx, &client.GetServicesParams{Imei: &imei, Odo: ptr(r.JSON200.Data[0].Odo)})
		if err != nil || f.JSON200 == nil || len(f.JSON200.Data) == 0 {
			t.Fatalf("filters: %v %s", err, f.Body)
		}
		for _, s := range f.JSON200.Data {
			if s.Imei != imei {
				t.Fatalf("filter imei=%s returned %s", imei, s.Imei)
			}
		}
	})
	t.Run("get_services_keyset", func(t *testing.T) {
		// The keyset extension through the client: walk acme's services by
		// name, descending, two at a time with after = meta.next; the walk
		// equals the one-page list, and a cursor used with another order
		// is 400 INVALID_PARAMETER naming after.
		params := func() *client.GetServicesParams {
			return &client.GetServicesParams{Sort: ptr(client.GetServicesParamsSortName), Order: ptr(client.GetServicesParamsOrderDesc)}
		}
		whole, err := acme.GetServicesWithResponse(ctx, params())
		if err != nil || whole.JSON200 == nil || len(whole.JSON200.Data) < 3 || whole.JSON200.Meta.Next != nil {
			t.Fatalf("one page: %v %s", err, whole.Body)
		}
		var walked []int64
		var after *string
		for range whole.JSON200.Data {
			p := params()
			p.PerPage, p.After = ptr(int32(2)), after
			r, err := acme.GetServicesWithResponse(ctx, p)
			if err != nil || r.JSON200 == nil || r.JSON200.Meta.Total != whole.JSON200.Meta.Total {
				t.Fatalf("walk: %v %s", err, r.Body)
			}
			for _, s := range r.JSON200.Data {
				walked = append(walked, s.ServiceId)
			}
			if after = r.JSON200.Meta.Next; after == nil {
				break
			}
		}
		if len(walked) != len(whole.JSON200.Data) {
			t.Fatalf("walked %v, the list has %d", walked, len(whole.JSON200.Data))
		}
		for i, s := range whole.JSON200.Data {
			if walked[i] != s.ServiceId {
				t.Fatalf("walked %v, item %d of the list is %d", walked, i, s.ServiceId)
			}
		}
		first, err := acme.GetServicesWithResponse(ctx, &client.GetServicesParams{PerPage: ptr(int32(1))})
		if err != nil || first.JSON200 == nil || first.JSON200.Meta.Next == nil {
			t.Fatalf("first page: %v %s", err, first.Body)
		}
		p := params()
		p.After = first.JSON200.Meta.Next
		r, err := acme.GetServicesWithResponse(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		failure(t, r.HTTPResponse, r.JSON400, http.StatusBadRequest, client.ErrorCodeINVALIDPARAMETER)
		if r.JSON400.Error.Details == nil || (*r.JSON400.Error.Details)["parameter"] != "after" {
			t.Fatalf("details %v", r.JSON400.Error.Details)
		}
	})
	t.Run("get_services_400", func(t *testing.T) {
		r, err := acme.GetServicesWithResponse(ctx, &client.GetServicesParams{PerPage: ptr(int32(501))})
		if err != nil {
			t.Fatal(err)
		}
		failure(t, r.HTTPResponse, r.JSON400, http.StatusBadRequest, client.ErrorCodeINVALIDPARAMETER)
		if r.JSON400.Error.Details == nil || (*r.JSON400.Error.Details)["parameter"] != "per_page" {
			t.Fatalf("details %v", r.JSON400.Error.Details)
		}
	})

	t.Run("get_services_due", func(t *testing.T) {
		r, err := c.bearer("admin-all").GetServicesDueWithResponse(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r.JSON200 == nil || len(r.JSON200.Data) == 0 {
			t.Fatalf("GET /services/due: %d %s", r.StatusCode(), r.Body)
		}
		for _, d := range r.JSON200.Data {
			if !d.State.Valid() || len(d.Due) == 0 {
				t.Fatalf("due record %+v", d)
			}
		}
	})

	t.Run("create_passenger", func(t *testing.T) {
		body := client.PassengerInput{PassengerName: "Rita Gomes", PassengerAssignId: nullable.NewNullableWithValue("e2e-0001"), PassengerPickupPointId: nullable.NewNullableWithValue(int64(2))}
		params := &client.CreatePassengerParams{IdempotencyKey: ptr("e2e-create-1")}
		r, err := acme.CreatePassengerWithResponse(ctx, params, body)
		if err != nil {
			t.Fatal(err)
		}
		if r.JSON201 == nil || r.JSON201.Data.PassengerId < 1 || r.JSON201.Data.PassengerAssignId != "E2E-0001" || !r.JSON201.Data.PassengerActive {
			t.Fatalf("POST /passengers: %d %s", r.StatusCode(), r.Body)
		}
		again, err := acme.CreatePassengerWithResponse(ctx, params, body)
		if err != nil || again.JSON201 == nil || again.JSON201.Data.PassengerId != r.JSON201.Data.PassengerId ||
			again.HTTPResponse.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %v %d %s", err, again.StatusCode(), again.Body)
		}
		// The same key with another body, then the same assign id under another key.
		reused, err := acme.CreatePassengerWithResponse(ctx, params, client.PassengerInput{PassengerName: "Other"})
		if err != nil {
			t.Fatal(err)
		}
		failure(t, reused.HTTPResponse, reused.JSON409, http.StatusConflict, client.ErrorCodeIDEMPOTENCYKEYREUSED)
		dup, err := acme.CreatePassengerWithResponse(ctx, nil, body)
		if err != nil {
			t.Fatal(err)
		}
		failure(t, dup.HTTPResponse, dup.JSON409, http.StatusConflict, client.ErrorCodeCONFLICT)
	})
	t.Run("management", func(t *testing.T) {
		fleetco := c.bearer("fleetco-all")
		me, err := acme.GetMeWithResponse(ctx)
		if err != nil || me.JSON200 == nil {
			t.Fatalf("GET /me: %v", err)
		}
		acmeID := me.JSON200.Data.Id
		list, err := fleetco.GetAccountsWithResponse(ctx, &client.GetAccountsParams{Type: ptr(client.GetAccountsParamsTypeUser)})
		if err != nil || list.JSON200 == nil || len(list.JSON200.Data) == 0 {
			t.Fatalf("GET /accounts: %v %d %s", err, list.StatusCode(), list.Body)
		}
		created, err := acme.CreateAccountWithResponse(ctx, &client.CreateAccountParams{IdempotencyKey: ptr("e2e-account-1")},
			client.AccountInput{Username: "acme-e2e", Type: client.AccountInputTypeSubaccount, ManagerId: nullable.NewNullableWithValue(acmeID)})
		if err != nil || created.JSON201 == nil || created.JSON201.Data.Username != "acme-e2e" {
			t.Fatalf("POST /accounts: %v %d %s", err, created.StatusCode(), created.Body)
		}
		id := created.JSON201.Data.Id
		denied, err := acme.CreateAccountWithResponse(ctx, nil, client.AccountInput{Username: "acme-e2e-user", Type: client.AccountInputTypeUser, ManagerId: nullable.NewNullableWithValue(acmeID)})
		if err != nil {
			t.Fatal(err)
		}
		failure(t, denied.HTTPResponse, denied.JSON403, http.StatusForbidden, client.ErrorCodeMANAGEMENTDENIED)
		one, err := fleetco.GetAccountWithResponse(ctx, id)
		if err != nil || one.JSON200 == nil || one.JSON200.Data.Id != id {
			t.Fatalf("GET /accounts/{id}: %v %d %s", err, one.StatusCode(), one.Body)
		}
		other, err := c.bearer("northwind-all").GetAccountWithResponse(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		failure(t, other.HTTPResponse, other.JSON404, http.StatusNotFound, client.ErrorCodeNOTFOUND)
		upd, err := acme.UpdateAccountWithResponse(ctx, id, client.AccountPatchInput{Active: ptr(false)})
		if err != nil || upd.JSON200 == nil || upd.JSON200.Data.Active {
			t.Fatalf("PATCH /accounts/{id}: %v %d %s", err, upd.StatusCode(), upd.Body)
		}
		own, err := acme.UpdateAccountWithResponse(ctx, acmeID, client.AccountPatchInput{ReadOnly: ptr(false)})
		if err != nil {
			t.Fatal(err)
		}
		failure(t, own.HTTPResponse, own.JSON403, http.StatusForbidden, client.ErrorCodeMANAGEMENTDENIED)
		events, err := acme.GetAuditEventsWithResponse(ctx, &client.GetAuditEventsParams{TargetAccountId: ptr(id)})
		if err != nil || events.JSON200 == nil || len(events.JSON200.Data) != 2 || events.JSON200.Data[0].Action != client.AuditEventActionAccountUpdate {
			t.Fatalf("GET /audit-events: %v %d %s", err, events.StatusCode(), events.Body)
		}
		// Usage (docs/design.md §12): the manager reads its scope's, another
		// tenant's account is 404 like GET /accounts/{id}.
		month := client.GetUsageParamsGroupMonth
		usage, err := fleetco.GetUsageWithResponse(ctx, &client.GetUsageParams{Group: &month})
		if err != nil || usage.JSON200 == nil || usage.JSON200.Meta.Total != int64(len(usage.JSON200.Data)) {
			t.Fatalf("GET /usage: %v %d %s", err, usage.StatusCode(), usage.Body)
		}
		foreign, err := c.bearer("northwind-all").GetUsageWithResponse(ctx, &client.GetUsageParams{AccountId: ptr(id)})
		if err != nil {
			t.Fatal(err)
		}
		failure(t, foreign.HTTPResponse, foreign.JSON404, http.StatusNotFound, client.ErrorCodeNOTFOUND)
		// Nullable fields (issue 19 item 18): the typed client sets a
		// date, leaves it alone (unspecified: omitted from the body), and
		// clears it with an explicit null.
		day := openapi_types.Date{Time: time.Date(2099, 12, 31, 0, 0, 0, 0, time.UTC)}
		set, err := acme.UpdateAccountWithResponse(ctx, id, client.AccountPatchInput{AccountExpire: ptr(true), AccountExpireDt: nullable.NewNullableWithValue(day)})
		if err != nil || set.JSON200 == nil || !sameDay(set.JSON200.Data.AccountExpireDt, day) {
			t.Fatalf("PATCH account_expire_dt: %v %d %s", err, set.StatusCode(), set.Body)
		}
		kept, err := acme.UpdateAccountWithResponse(ctx, id, client.AccountPatchInput{Email: ptr("e2e@acme.example")})
		if err != nil || kept.JSON200 == nil || !sameDay(kept.JSON200.Data.AccountExpireDt, day) {
			t.Fatalf("PATCH without account_expire_dt changed it: %v %d %s", err, kept.StatusCode(), kept.Body)
		}
		var clear nullable.Nullable[openapi_types.Date]
		clear.SetNull()
		cleared, err := acme.UpdateAccountWithResponse(ctx, id, client.AccountPatchInput{AccountExpire: ptr(false), AccountExpireDt: clear})
		if err != nil || cleared.JSON200 == nil || !cleared.JSON200.Data.AccountExpireDt.IsNull() {
			t.Fatalf("PATCH account_expire_dt null: %v %d %s", err, cleared.StatusCode(), cleared.Body)
		}
		if b, _ := json.Marshal(client.AccountPatchInput{AccountExpireDt: clear}); string(b) != `{"account_expire_dt":null}` {
			t.Fatalf("the client sends %s for a cleared date", b)
		}
		again, err := fleetco.GetAccountWithResponse(ctx, id)
		if err != nil || again.JSON200 == nil || !again.JSON200.Data.AccountExpireDt.IsNull() || again.JSON200.Data.AccountExpire {
			t.Fatalf("GET after clearing: %v %d %s", err, again.StatusCode(), again.Body)
		}
		// An account rate limit (issue 21 item 1): set on the subaccount
		// by its user, shown by GET; not on one's own account.
		limited, err := acme.UpdateAccountWithResponse(ctx, id, client.AccountPatchInput{RateLimit: nullable.NewNullableWithValue(30)})
		if err != nil || limited.JSON200 == nil || limited.JSON200.Data.RateLimit.MustGet() != 30 {
			t.Fatalf("PATCH rate_limit: %v %d %s", err, limited.StatusCode(), limited.Body)
		}
		ownLimit, err := acme.UpdateAccountWithResponse(ctx, acmeID, client.AccountPatchInput{RateLimit: nullable.NewNullableWithValue(30)})
		if err != nil {
			t.Fatal(err)
		}
		failure(t, ownLimit.HTTPResponse, ownLimit.JSON403, http.StatusForbidden, client.ErrorCodeMANAGEMENTDENIED)
		// Offboarding (issue 21 item 4): never one's own account; the
		// manager erases the subaccount, which is then gone.
		ownErase, err := acme.EraseAccountWithResponse(ctx, acmeID)
		if err != nil {
			t.Fatal(err)
		}
		failure(t, ownErase.HTTPResponse, ownErase.JSON403, http.StatusForbidden, client.ErrorCodeMANAGEMENTDENIED)
		erased, err := fleetco.EraseAccountWithResponse(ctx, id)
		if err != nil || erased.StatusCode() != http.StatusNoContent || len(erased.Body) != 0 {
			t.Fatalf("DELETE /accounts/{id}: %v %d %s", err, erased.StatusCode(), erased.Body)
		}
		gone, err := fleetco.EraseAccountWithResponse(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		failure(t, gone.HTTPResponse, gone.JSON404, http.StatusNotFound, client.ErrorCodeNOTFOUND)
	})
	t.Run("grants_and_objects", func(t *testing.T) {
		me, err := acme.GetMeWithResponse(ctx)
		if err != nil || me.JSON200 == nil {
			t.Fatalf("GET /me: %v", err)
		}
		acmeID := me.JSON200.Data.Id
		obj, err := acme.CreateObjectWithResponse(ctx, &client.CreateObjectParams{IdempotencyKey: ptr("e2e-object-1")},
			client.ObjectInput{Imei: "e2e-device-1", Name: nullable.NewNullableWithValue("E2E van"), AccountId: acmeID, Odometer: nullable.NewNullableWithValue(int64(10))})
		if err != nil || obj.JSON201 == nil || obj.JSON201.Data.Imei != "e2e-device-1" || obj.JSON201.Data.AccountId != acmeID {
			t.Fatalf("POST /objects: %v %d %s", err, obj.StatusCode(), obj.Body)
		}
		dup, err := acme.CreateObjectWithResponse(ctx, nil, client.ObjectInput{Imei: "e2e-device-1", AccountId: acmeID})
		if err != nil {
			t.Fatal(err)
		}
		failure(t, dup.HTTPResponse, dup.JSON409, http.StatusConflict, client.ErrorCodeCONFLICT)
		subs, err := acme.GetAccountsWithResponse(ctx, &client.GetAccountsParams{Type: ptr(client.GetAccountsParamsTypeSubaccount)})
		if err != nil || subs.JSON200 == nil || len(subs.JSON200.Data) == 0 {
			t.Fatalf("GET /accounts: %v %d %s", err, subs.StatusCode(), subs.Body)
		}
		sub := subs.JSON200.Data[0].Id
		put, err := acme.ReplaceAccountObjectsWithResponse(ctx, sub, client.GrantsInput{Imei: []string{"e2e-device-1"}})
		if err != nil || put.JSON200 == nil || len(put.JSON200.Data) != 1 || put.JSON200.Data[0].Imei != "e2e-device-1" {
			t.Fatalf("PUT /accounts/{id}/objects: %v %d %s", err, put.StatusCode(), put.Body)
		}
		foreign, err := acme.ReplaceAccountObjectsWithResponse(ctx, sub, client.GrantsInput{Imei: []string{"861073032104551"}})
		if err != nil {
			t.Fatal(err)
		}
		failure(t, foreign.HTTPResponse, foreign.JSON403, http.StatusForbidden, client.ErrorCodeMANAGEMENTDENIED)
		got, err := acme.GetAccountObjectsWithResponse(ctx, sub, nil)
		if err != nil || got.JSON200 == nil || len(got.JSON200.Data) != 1 || got.JSON200.Data[0].Imei != "e2e-device-1" {
			t.Fatalf("GET /accounts/{id}/objects: %v %d %s", err, got.StatusCode(), got.Body)
		}
		notSub, err := acme.GetAccountObjectsWithResponse(ctx, acmeID, nil)
		if err != nil {
			t.Fatal(err)
		}
		failure(t, notSub.HTTPResponse, notSub.JSON400, http.StatusBadRequest, client.ErrorCodeINVALIDPARAMETER)
		// The manager moves the device to another of its customers (object.move).
		manager := c.bearer("fleetco-all")
		users, err := manager.GetAccountsWithResponse(ctx, &client.GetAccountsParams{Search: ptr("globex")})
		if err != nil || users.JSON200 == nil {
			t.Fatalf("GET /accounts?search=globex: %v", err)
		}
		var globexID int64
		for _, u := range users.JSON200.Data {
			if u.Username == "globex" {
				globexID = u.Id
			}
		}
		moved, err := manager.MoveObjectWithResponse(ctx, obj.JSON201.Data.Id, client.ObjectMove{AccountId: globexID})
		if err != nil || moved.JSON200 == nil || moved.JSON200.Data.AccountId != globexID || globexID == 0 {
			t.Fatalf("PATCH /objects/{id}: %v %d %s", err, moved.StatusCode(), moved.Body)
		}
		foreign2, err := acme.MoveObjectWithResponse(ctx, obj.JSON201.Data.Id, client.ObjectMove{AccountId: acmeID})
		if err != nil {
			t.Fatal(err)
		}
		failure(t, foreign2.HTTPResponse, foreign2.JSON404, http.StatusNotFound, client.ErrorCodeNOTFOUND)
	})
	t.Run("tokens", func(t *testing.T) {
		created, err := acme.CreateTokenWithResponse(ctx, &client.CreateTokenParams{IdempotencyKey: ptr("e2e-token-1")},
			client.TokenInput{Name: "e2e-readonly", Permissions: []client.TokenInputPermissions{client.TokenInputPermissionsGET, client.TokenInputPermissionsPOSTtokens}, RateLimit: nullable.NewNullableWithValue(10)})
		if err != nil || created.JSON201 == nil || created.JSON201.Data.Secret == nil || created.HTTPResponse.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("POST /tokens: %v %d %s", err, created.StatusCode(), created.Body)
		}
		tok := created.JSON201.Data
		// The new token works on the next request, within its permissions.
		ro := c.with("Bearer " + *tok.Secret)
		me, err := ro.GetMeWithResponse(ctx)
		if err != nil || me.JSON200 == nil || me.JSON200.Data.Username != "acme" {
			t.Fatalf("GET /me with the new token: %v %d %s", err, me.StatusCode(), me.Body)
		}
		wider, err := ro.CreateTokenWithResponse(ctx, nil, client.TokenInput{Name: "e2e-wider", Permissions: []client.TokenInputPermissions{client.TokenInputPermissionsAsterisk}})
		if err != nil {
			t.Fatal(err)
		}
		failure(t, wider.HTTPResponse, wider.JSON403, http.StatusForbidden, client.ErrorCodeMANAGEMENTDENIED)
		dup, err := acme.CreateTokenWithResponse(ctx, nil, client.TokenInput{Name: "e2e-readonly", Permissions: []client.TokenInputPermissions{client.TokenInputPermissionsGET}})
		if err != nil {
			t.Fatal(err)
		}
		failure(t, dup.HTTPResponse, dup.JSON409, http.StatusConflict, client.ErrorCodeCONFLICT)
		bad, err := acme.CreateTokenWithResponse(ctx, nil, client.TokenInput{Name: "e2e-bad", Permissions: []client.TokenInputPermissions{"GET /servics"}})
		if err != nil {
			t.Fatal(err)
		}
		failure(t, bad.HTTPResponse, bad.JSON400, http.StatusBadRequest, client.ErrorCodeVALIDATIONFAILED)
		list, err := acme.GetTokensWithResponse(ctx, &client.GetTokensParams{Name: ptr("e2e-readonly")})
		if err != nil || list.JSON200 == nil || len(list.JSON200.Data) != 1 || list.JSON200.Data[0].Id != tok.Id {
			t.Fatalf("GET /tokens: %v %d %s", err, list.StatusCode(), list.Body)
		}
		revoked, err := acme.RevokeTokenWithResponse(ctx, tok.Id)
		if err != nil || revoked.StatusCode() != http.StatusNoContent {
			t.Fatalf("DELETE /tokens/{id}: %v %d %s", err, revoked.StatusCode(), revoked.Body)
		}
		gone, err := ro.GetMeWithResponse(ctx)
		if err != nil {
			t.Fatal(err)
		}
		failure(t, gone.HTTPResponse, gone.JSON401, http.StatusUnauthorized, client.ErrorCodeINVALIDTOKEN)
		other, err := c.bearer("northwind-all").RevokeTokenWithResponse(ctx, tok.Id)
		if err != nil {
			t.Fatal(err)
		}
		failure(t, other.HTTPResponse, other.JSON404, http.StatusNotFound, client.ErrorCodeNOTFOUND)
	})
	t.Run("readings_and_positions", func(t *testing.T) {
		when := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
		in := client.ReadingsInput{Readings: []client.ReadingInput{
			{Imei: "356938035643809", Time: when, Speed: nullable.NewNullableWithValue(42.5)},
			{Imei: "000000000000000", Time: when},
		}}
		r, err := acme.PostReadingsWithResponse(ctx, in)
		if err != nil || r.JSON200 == nil || r.JSON200.Data.Accepted != 1 || len(r.JSON200.Data.Rejected) != 1 ||
			r.JSON200.Data.Rejected[0].Code != client.ReadingRejectionCodeUNKNOWNDEVICE {
			t.Fatalf("POST /readings: %v %d %s", err, r.StatusCode(), r.Body)
		}
		sub, err := c.bearer("acme-night-all").PostReadingsWithResponse(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		failure(t, sub.HTTPResponse, sub.JSON403, http.StatusForbidden, client.ErrorCodePRIVILEGEREQUIRED)
		objs, err := acme.GetObjectsWithResponse(ctx, &client.GetObjectsParams{Imei: ptr("356938035643809")})
		if err != nil || objs.JSON200 == nil || len(objs.JSON200.Data) != 1 {
			t.Fatalf("GET /objects: %v", err)
		}
		dev, err := acme.GetObjectWithResponse(ctx, objs.JSON200.Data[0].Id)
		if err != nil || dev.JSON200 == nil || dev.JSON200.Data.Imei != "356938035643809" {
			t.Fatalf("GET /objects/{id}: %v %d %s", err, dev.StatusCode(), dev.Body)
		}
		from := when.Add(-time.Hour)
		p, err := acme.GetObjectPositionsWithResponse(ctx, objs.JSON200.Data[0].Id, &client.GetObjectPositionsParams{From: &from})
		if err != nil || p.JSON200 == nil || len(p.JSON200.Data) != 1 {
			t.Fatalf("GET /objects/{id}/positions: %v %d %s", err, p.StatusCode(), p.Body)
		}
		none, err := c.bearer("northwind-all").GetObjectPositionsWithResponse(ctx, objs.JSON200.Data[0].Id, nil)
		if err != nil {
			t.Fatal(err)
		}
		failure(t, none.HTTPResponse, none.JSON404, http.StatusNotFound, client.ErrorCodeNOTFOUND)
	})
	t.Run("notifications", func(t *testing.T) {
		list, err := acme.GetNotificationsWithResponse(ctx, nil)
		if err != nil || list.JSON200 == nil || len(list.JSON200.Data) == 0 {
			t.Fatalf("GET /notifications: %v", err)
		}
		id := list.JSON200.Data[0].Id
		one, err := acme.GetNotificationWithResponse(ctx, id)
		if err != nil || one.JSON200 == nil || one.JSON200.Data.Id != id {
			t.Fatalf("GET /notifications/{id}: %v %d %s", err, one.StatusCode(), one.Body)
		}
		other, err := c.bearer("northwind-all").GetNotificationWithResponse(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		failure(t, other.HTTPResponse, other.JSON404, http.StatusNotFound, client.ErrorCodeNOTFOUND)
		// The stream's open answer is the test of package api (it stays
		// open); here its refusal, a Last-Event-ID of no notification of
		// the caller's, through the client.
		s, err := acme.GetNotificationsStreamWithResponse(ctx, &client.GetNotificationsStreamParams{LastEventID: ptr("9223372036854775807")})
		if err != nil {
			t.Fatal(err)
		}
		failure(t, s.HTTPResponse, s.JSON400, http.StatusBadRequest, client.ErrorCodeINVALIDPARAMETER)
	})
	t.Run("webhooks", func(t *testing.T) {
		created, err := acme.CreateWebhookWithResponse(ctx, &client.CreateWebhookParams{IdempotencyKey: ptr("e2e-webhook-1")},
			client.WebhookInput{Url: "https://hooks.acme.example/e2e", Description: nullable.NewNullableWithValue("e2e")})
		if err != nil || created.JSON201 == nil || created.JSON201.Data.Secret == nil || !strings.HasPrefix(*created.JSON201.Data.Secret, "whsec_") {
			t.Fatalf("POST /webhooks: %v %d %s", err, created.StatusCode(), created.Body)
		}
		id := created.JSON201.Data.Id
		bad, err := acme.CreateWebhookWithResponse(ctx, nil, client.WebhookInput{Url: "https://127.0.0.1/hook"})
		if err != nil {
			t.Fatal(err)
		}
		failure(t, bad.HTTPResponse, bad.JSON400, http.StatusBadRequest, client.ErrorCodeVALIDATIONFAILED)
		one, err := acme.GetWebhookWithResponse(ctx, id)
		if err != nil || one.JSON200 == nil || one.JSON200.Data.Url != "https://hooks.acme.example/e2e" {
			t.Fatalf("GET /webhooks/{id}: %v %d %s", err, one.StatusCode(), one.Body)
		}
		hidden, err := c.bearer("northwind-all").GetWebhookWithResponse(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		failure(t, hidden.HTTPResponse, hidden.JSON404, http.StatusNotFound, client.ErrorCodeNOTFOUND)
		upd, err := acme.UpdateWebhookWithResponse(ctx, id, client.WebhookPatch{Description: ptr("e2e, changed")})
		if err != nil || upd.JSON200 == nil || upd.JSON200.Data.Description != "e2e, changed" {
			t.Fatalf("PATCH /webhooks/{id}: %v %d %s", err, upd.StatusCode(), upd.Body)
		}
		rotated, err := acme.RotateWebhookSecretWithResponse(ctx, id)
		if err != nil || rotated.JSON200 == nil || rotated.JSON200.Data.Secret == *created.JSON201.Data.Secret ||
			!rotated.JSON200.Data.PreviousSecretExpiresAt.After(time.Now()) {
			t.Fatalf("POST /webhooks/{id}/rotate-secret: %v %d %s", err, rotated.StatusCode(), rotated.Body)
		}
		queued, err := acme.TestWebhookWithResponse(ctx, id)
		if err != nil || queued.JSON202 == nil || queued.JSON202.Data.WebhookId != id {
			t.Fatalf("POST /webhooks/{id}/test: %v %d %s", err, queued.StatusCode(), queued.Body)
		}
		delivery := queued.JSON202.Data.Id
		list, err := acme.GetWebhookDeliveriesWithResponse(ctx, id, nil)
		if err != nil || list.JSON200 == nil || len(list.JSON200.Data) != 1 || list.JSON200.Data[0].Id != delivery {
			t.Fatalf("GET /webhooks/{id}/deliveries: %v %d %s", err, list.StatusCode(), list.Body)
		}
		// The server's sender may be making its attempt (to a name that
		// does not resolve) at this moment: 200, or 409 CONFLICT then.
		retried, err := acme.RetryWebhookDeliveryWithResponse(ctx, id, delivery)
		if err != nil {
			t.Fatal(err)
		}
		if retried.StatusCode() == http.StatusConflict {
			failure(t, retried.HTTPResponse, retried.JSON409, http.StatusConflict, client.ErrorCodeCONFLICT)
		} else if retried.JSON200 == nil || retried.JSON200.Data.Id != delivery {
			t.Fatalf("POST /webhooks/{id}/deliveries/{delivery_id}/retry: %d %s", retried.StatusCode(), retried.Body)
		}
		unknown, err := acme.RetryWebhookDeliveryWithResponse(ctx, id, delivery+1000)
		if err != nil {
			t.Fatal(err)
		}
		failure(t, unknown.HTTPResponse, unknown.JSON404, http.StatusNotFound, client.ErrorCodeNOTFOUND)
		gone, err := acme.DeleteWebhookWithResponse(ctx, id)
		if err != nil || gone.StatusCode() != http.StatusNoContent {
			t.Fatalf("DELETE /webhooks/{id}: %v %d %s", err, gone.StatusCode(), gone.Body)
		}
		again, err := acme.GetWebhookWithResponse(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		failure(t, again.HTTPResponse, again.JSON404, http.StatusNotFound, client.ErrorCodeNOTFOUND)
	})
	t.Run("zones", func(t *testing.T) {
		ring := []client.Point{{Lat: 48.80, Lon: 2.30}, {Lat: 48.80, Lon: 2.32}, {Lat: 48.82, Lon: 2.31}, {Lat: 48.80, Lon: 2.30}}
		created, err := acme.CreateZoneWithResponse(ctx, &client.CreateZoneParams{IdempotencyKey: ptr("e2e-zone-1")},
			client.ZoneInput{Name: "e2e yard", Kind: client.ZoneInputKindPolygon, Points: &ring, Color: nullable.NewNullableWithValue("#ff8800")})
		if err != nil || created.JSON201 == nil || created.JSON201.Data.Name != "e2e yard" {
			t.Fatalf("POST /zones: %v %d %s", err, created.StatusCode(), created.Body)
		}
		id := created.JSON201.Data.Id
		bowTie := []client.Point{{Lat: 0, Lon: 0}, {Lat: 1, Lon: 1}, {Lat: 0, Lon: 1}, {Lat: 1, Lon: 0}, {Lat: 0, Lon: 0}}
		bad, err := acme.CreateZoneWithResponse(ctx, nil, client.ZoneInput{Name: "bow tie", Kind: client.ZoneInputKindPolygon, Points: &bowTie})
		if err != nil {
			t.Fatal(err)
		}
		failure(t, bad.HTTPResponse, bad.JSON400, http.StatusBadRequest, client.ErrorCodeVALIDATIONFAILED)
		one, err := acme.GetZoneWithResponse(ctx, id)
		if err != nil || one.JSON200 == nil || one.JSON200.Data.Kind != "polygon" {
			t.Fatalf("GET /zones/{id}: %v %d %s", err, one.StatusCode(), one.Body)
		}
		hidden, err := c.bearer("northwind-all").GetZoneWithResponse(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		failure(t, hidden.HTTPResponse, hidden.JSON404, http.StatusNotFound, client.ErrorCodeNOTFOUND)
		upd, err := acme.UpdateZoneWithResponse(ctx, id, client.ZonePatch{Name: ptr("e2e yard, changed")})
		if err != nil || upd.JSON200 == nil || upd.JSON200.Data.Name != "e2e yard, changed" {
			t.Fatalf("PATCH /zones/{id}: %v %d %s", err, upd.StatusCode(), upd.Body)
		}
		gone, err := acme.DeleteZoneWithResponse(ctx, id)
		if err != nil || gone.StatusCode() != http.StatusNoContent {
			t.Fatalf("DELETE /zones/{id}: %v %d %s", err, gone.StatusCode(), gone.Body)
		}
		again, err := acme.GetZoneWithResponse(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		failure(t, again.HTTPResponse, again.JSON404, http.StatusNotFound, client.ErrorCodeNOTFOUND)
	})
	// The writes of event rules, service records and reports (docs/design.md
	// §15) on acme's van: each created, changed and deleted through the
	// client, a service marked done, and the refusals a client meets.
	t.Run("writes", func(t *testing.T) {
		const van, tailspins = "356938035643817", "865231041152302"
		ev, err := acme.CreateEventWithResponse(ctx, &client.CreateEventParams{IdempotencyKey: ptr("e2e-event-1")}, client.EventInput{
			Type: client.EventInputTypeOverspeed, Name: "e2e overspeed", CheckedValue: ptr("100"), Imei: &[]string{van}, Active: ptr(true)})
		if err != nil || ev.JSON201 == nil || ev.JSON201.Data.CheckedValue != "100" {
			t.Fatalf("POST /events: %v %d %s", err, ev.StatusCode(), ev.Body)
		}
		eventID := ev.JSON201.Data.EventId
		dup, err := acme.CreateEventWithResponse(ctx, nil, client.EventInput{Type: client.EventInputTypeSos, Name: "e2e overspeed"})
		if err != nil {
			t.Fatal(err)
		}
		failure(t, dup.HTTPResponse, dup.JSON409, http.StatusConflict, client.ErrorCodeCONFLICT)
		foreign, err := acme.CreateEventWithResponse(ctx, nil, client.EventInput{Type: client.EventInputTypeSos, Name: "e2e foreign",
			Imei: &[]string{tailspins}})
		if err != nil {
			t.Fatal(err)
		}
		failure(t, foreign.HTTPResponse, foreign.JSON400, http.StatusBadRequest, client.ErrorCodeVALIDATIONFAILED)
		evUpd, err := acme.UpdateEventWithResponse(ctx, eventID, client.EventPatch{CheckedValue: ptr("110")})
		if err != nil || evUpd.JSON200 == nil || evUpd.JSON200.Data.CheckedValue != "110" || !evUpd.JSON200.Data.Active {
			t.Fatalf("PATCH /events/{id}: %v %d %s", err, evUpd.StatusCode(), evUpd.Body)
		}
		if gone, err := acme.DeleteEventWithResponse(ctx, eventID); err != nil || gone.StatusCode() != http.StatusNoContent {
			t.Fatalf("DELETE /events/{id}: %v %d %s", err, gone.StatusCode(), gone.Body)
		}
		hidden, err := c.bearer("northwind-all").DeleteEventWithResponse(ctx, eventID)
		if err != nil {
			t.Fatal(err)
		}
		failure(t, hidden.HTTPResponse, hidden.JSON404, http.StatusNotFound, client.ErrorCodeNOTFOUND)

		sv, err := acme.CreateServiceWithResponse(ctx, &client.CreateServiceParams{IdempotencyKey: ptr("e2e-service-1")}, client.ServiceInput{
			Imei: van, Name: "e2e tyres", Odo: ptr(true), OdoInterval: ptr(int64(40000)), OdoLast: ptr(int64(1000))})
		if err != nil || sv.JSON201 == nil || sv.JSON201.Data.Imei != van {
			t.Fatalf("POST /services: %v %d %s", err, sv.StatusCode(), sv.Body)
		}
		serviceID := sv.JSON201.Data.ServiceId
		svUpd, err := acme.UpdateServiceWithResponse(ctx, serviceID, client.ServicePatch{OdoInterval: ptr(int64(45000))})
		if err != nil || svUpd.JSON200 == nil || svUpd.JSON200.Data.OdoInterval != 45000 {
			t.Fatalf("PATCH /services/{id}: %v %d %s", err, svUpd.StatusCode(), svUpd.Body)
		}
		done, err := acme.ServiceDoneWithResponse(ctx, serviceID, client.ServiceDone{Odometer: nullable.NewNullableWithValue(int64(42000))})
		if err != nil || done.JSON200 == nil || done.JSON200.Data.OdoLast != 42000 {
			t.Fatalf("POST /services/{id}/done: %v %d %s", err, done.StatusCode(), done.Body)
		}
		if gone, err := acme.DeleteServiceWithResponse(ctx, serviceID); err != nil || gone.StatusCode() != http.StatusNoContent {
			t.Fatalf("DELETE /services/{id}: %v %d %s", err, gone.StatusCode(), gone.Body)
		}

		rp, err := acme.CreateReportWithResponse(ctx, &client.CreateReportParams{IdempotencyKey: ptr("e2e-report-1")}, client.ReportInput{
			Name: "e2e stops", Type: ptr("drives_stops"), Imei: &[]string{van}})
		if err != nil || rp.JSON201 == nil || rp.JSON201.Data.Name != "e2e stops" {
			t.Fatalf("POST /reports: %v %d %s", err, rp.StatusCode(), rp.Body)
		}
		reportID := rp.JSON201.Data.ReportId
		rpUpd, err := acme.UpdateReportWithResponse(ctx, reportID, client.ReportPatch{SpeedLimit: ptr(int64(80))})
		if err != nil || rpUpd.JSON200 == nil || rpUpd.JSON200.Data.SpeedLimit != 80 {
			t.Fatalf("PATCH /reports/{id}: %v %d %s", err, rpUpd.StatusCode(), rpUpd.Body)
		}
		if gone, err := acme.DeleteReportWithResponse(ctx, reportID); err != nil || gone.StatusCode() != http.StatusNoContent {
			t.Fatalf("DELETE /reports/{id}: %v %d %s", err, gone.StatusCode(), gone.Body)
		}
	})
	t.Run("create_passenger_errors", func(t *testing.T) {
		r, err := acme.CreatePassengerWithResponse(ctx, nil, client.PassengerInput{PassengerName: "  "})
		if err != nil {
			t.Fatal(err)
		}
		failure(t, r.HTTPResponse, r.JSON400, http.StatusBadRequest, client.ErrorCodeVALIDATIONFAILED)

		ro, err := c.bearer("umbrella-all").CreatePassengerWithResponse(ctx, nil, client.PassengerInput{PassengerName: "Read Only"})
		if err != nil {
			t.Fatal(err)
		}
		failure(t, ro.HTTPResponse, ro.JSON403, http.StatusForbidden, client.ErrorCodeREADONLYACCOUNT)

		text, err := acme.CreatePassengerWithBodyWithResponse(ctx, nil, "text/plain", strings.NewReader(`{"passenger_name":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		failure(t, text.HTTPResponse, text.JSON415, http.StatusUnsupportedMediaType, client.ErrorCodeUNSUPPORTEDMEDIATYPE)

		big := `{"passenger_name":"x","passenger_desc":"` + strings.Repeat("x", 70<<10) + `"}`
		large, err := acme.CreatePassengerWithBodyWithResponse(ctx, nil, "application/json", strings.NewReader(big))
		if err != nil {
			t.Fatal(err)
		}
		failure(t, large.HTTPResponse, large.JSON413, http.StatusRequestEntityTooLarge, client.ErrorCodePAYLOADTOOLARGE)
	})

	t.Run("get_reports", func(t *testing.T) {
		r, err := acme.GetReportsWithResponse(ctx, &client.GetReportsParams{Search: ptr("da")})
		if err != nil {
			t.Fatal(err)
		}
		if r.JSON200 == nil || r.JSON200.Meta.Page != 1 || r.JSON200.Meta.PerPage != 50 {
			t.Fatalf("GET /reports: %d %s", r.StatusCode(), r.Body)
		}
		denied, err := c.bearer("acme-services-only").GetReportsWithResponse(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		failure(t, denied.HTTPResponse, denied.JSON403, http.StatusForbidden, client.ErrorCodeTOKENPERMISSIONDENIED)
	})

	// Every list of a listed resource, through the client's method named
	// after its operation get_<resource>, so that a new list is driven
	// without code here (the typed subtests above go further).
	t.Run("every list", func(t *testing.T) {
		for _, d := range storage.Descriptors() {
			if !d.Listed() {
				continue
			}
			name := "Get" + camel(string(d.Resource())) + "WithResponse"
			m := reflect.ValueOf(acme).MethodByName(name)
			if !m.IsValid() {
				t.Errorf("the generated client has no %s", name)
				continue
			}
			out := m.Call([]reflect.Value{reflect.ValueOf(ctx), reflect.Zero(m.Type().In(1))})
			if err, _ := out[1].Interface().(error); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			r := out[0].Elem()
			if code := r.MethodByName("StatusCode").Call(nil)[0].Int(); code != http.StatusOK || r.FieldByName("JSON200").IsNil() {
				t.Errorf("%s: status %d, body %s", name, code, r.FieldByName("Body").Bytes())
			}
		}
	})

	var eventID int64
	t.Run("get_events", func(t *testing.T) {
		r, err := acme.GetEventsWithResponse(ctx, &client.GetEventsParams{Sort: ptr(client.GetEventsParamsSortEventId)})
		if err != nil {
			t.Fatal(err)
		}
		if r.JSON200 == nil || len(r.JSON200.Data) == 0 {
			t.Fatalf("GET /events: %d %s", r.StatusCode(), r.Body)
		}
		eventID = r.JSON200.Data[0].EventId
		sub, err := c.bearer("acme-night-all").GetEventsWithResponse(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		failure(t, sub.HTTPResponse, sub.JSON403, http.StatusForbidden, client.ErrorCodePRIVILEGEREQUIRED)
	})
	t.Run("get_event", func(t *testing.T) {
		r, err := acme.GetEventWithResponse(ctx, eventID)
		if err != nil {
			t.Fatal(err)
		}
		if r.JSON200 == nil || r.JSON200.Data.EventId != eventID {
			t.Fatalf("GET /events/%d: %d %s", eventID, r.StatusCode(), r.Body)
		}
		missing, err := acme.GetEventWithResponse(ctx, 1<<40)
		if err != nil {
			t.Fatal(err)
		}
		failure(t, missing.HTTPResponse, missing.JSON404, http.StatusNotFound, client.ErrorCodeNOTFOUND)
		zero, err := acme.GetEventWithResponse(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		failure(t, zero.HTTPResponse, zero.JSON400, http.StatusBadRequest, client.ErrorCodeINVALIDPARAMETER)
	})

	t.Run("rate_limited_429", func(t *testing.T) {
		limited := c.bearer("acme-ratelimited")
		for i := 0; i < 20; i++ {
			r, err := limited.GetMeWithResponse(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if r.StatusCode() == http.StatusOK {
				continue
			}
			failure(t, r.HTTPResponse, r.JSON429, http.StatusTooManyRequests, client.ErrorCodeRATELIMITED)
			if r.HTTPResponse.Header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
			return
		}
		t.Fatal("no 429 after 20 requests of a token limited to 5 a minute")
	})

	t.Run("document_and_docs", func(t *testing.T) {
		want, err := os.ReadFile(filepath.Join("..", "api", "testdata", "openapi.golden.json"))
		if err != nil {
			t.Fatal(err)
		}
		for path, check := range map[string]func([]byte) bool{
			"/api/v2/openapi.json": func(b []byte) bool { return bytes.Equal(b, want) },
			"/api/v2/docs":         func(b []byte) bool { return bytes.Contains(b, []byte(`id="swagger-ui"`)) },
		} {
			resp, err := http.Get(origin + path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !check(b) {
				t.Fatalf("GET %s (no token): %d", path, resp.StatusCode)
			}
		}
	})
}
