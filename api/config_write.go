package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// The writes of what a fleet configures (docs/design.md §15): event rules,
// service records and reports. Each resource declares a configResource
// (its routes, its body and its validation); the openings here are the
// same for the three: the route decision has checked the token's
// permission, write access and the caller's state (subaccounts write none
// of them: policy authz not_for_subaccounts); the body is strict
// (decodeBody) and validated whole, every failing field at once
// (VALIDATION_FAILED details.fields); the row's account is the body's
// account_id (a create; default the caller's own), in the caller's
// management scope (404 outside, like a missing one) and not a subaccount
// (rows belong to the account that owns the devices); an existing row is
// found in the caller's row scope (404 outside, like a missing id); the
// devices a row names must be its account's (VALIDATION_FAILED "imei",
// the same answer for an unknown IMEI and another tenant's).

// configRequest is a validated create: the row and the account it is for
// (nil: the caller's own).
type configRequest[T any] struct {
	Row     T      `json:"row"`
	Account *int64 `json:"account_id"`
}

// configResource declares the writes of one resource: rows T, bodies
// In (create) and P (change).
type configResource[T, In, P any] struct {
	// what names a row in messages ("event rule").
	what string
	// route names the create in the Idempotency-Key's request hash.
	route string
	// resource is the row scope's resource.
	resource policy.Resource
	// validate turns a create's body into the row and its account.
	validate func(in In, faults textFaults) (configRequest[T], error)
	// patch turns the change's body merged over the stored row into the row.
	patch func(in P, faults textFaults) (T, error)
	// owner sets the row's account.
	owner func(row *T, account int64)
	// conflict is the message of a 409 (a duplicate name).
	conflict string
}

// create answers a POST of the resource: 201 with the created row.
func (cr configResource[T, In, P]) create(s *Server, r *http.Request, ctx context.Context,
	store func(ctx context.Context, scope, mscope policy.Scope, a storage.Actor, row T, idem *storage.IdempotentRequest) (T, bool, error)) (T, bool, error) {
	var zero T
	// The opening of every write (managementWrite): the owner, absent the
	// caller, is filled in before the Idempotency-Key's hash and is the
	// target account (404 outside the caller's management scope).
	o, err := managementWrite[In, configRequest[T]]{validate: cr.validate, create: cr.route,
		inherit: func(m manager, v *configRequest[T]) {
			if v.Account == nil {
				own := m.principal.Account.ID
				v.Account = &own
			}
		},
		account: func(v configRequest[T]) *int64 { return v.Account },
	}.open(s, ctx, r)
	if err != nil {
		return zero, false, err
	}
	m, req, idem, owner := o.manager, o.value, o.idem, *o.value.Account
	if o.target.Type == string(tenancy.Subaccount) {
		return zero, false, newError(CodeValidationFailed, "the "+cr.what+" is not valid", map[string]any{"fields": map[string]any{
			"account_id": "a subaccount owns no " + cr.what + "s: name the account that owns the devices"}})
	}
	scope, err := s.scopeFor(ctx, cr.resource)
	if err != nil {
		return zero, false, err
	}
	cr.owner(&req.Row, owner)
	row, replayed, err := store(ctx, scope, m.scope, actor(ctx, m), req.Row, idem)
	if err != nil {
		return zero, false, cr.writeError(err)
	}
	return row, replayed, nil
}

// change answers a PATCH of the resource: 200 with the changed row. The
// body's fields replace the stored row's; the result is validated whole,
// like a create's body.
func (cr configResource[T, In, P]) change(s *Server, c pathRequest, ctx context.Context,
	store func(ctx context.Context, scope, mscope policy.Scope, a storage.Actor, id int64, apply func(T) (T, error)) (T, error)) (T, error) {
	var zero T
	id, err := idParamOnly(c)
	if err != nil {
		return zero, err
	}
	body, err := readBody(c.Request())
	if err != nil {
		return zero, err
	}
	_, faults, err := decodeBody[P](bytes.NewReader(body))
	if err != nil {
		return zero, err
	}
	var present map[string]json.RawMessage
	if err := json.Unmarshal(body, &present); err != nil {
		return zero, invalidBody("not valid JSON", nil)
	}
	if len(present) == 0 {
		return zero, newError(CodeValidationFailed, "the "+cr.what+" is not valid", map[string]any{"fields": map[string]any{
			"body": "name at least one field to change"}})
	}
	m, err := s.managerFrom(ctx)
	if err != nil {
		return zero, err
	}
	scope, err := s.scopeFor(ctx, cr.resource)
	if err != nil {
		return zero, err
	}
	row, err := store(ctx, scope, m.scope, actor(ctx, m), id, func(cur T) (T, error) {
		in, err := mergedBody[P](cur, present)
		if err != nil {
			return zero, err
		}
		return cr.patch(in, faults)
	})
	if err != nil {
		return zero, cr.writeError(err)
	}
	return row, nil
}

// remove answers a DELETE of the resource: 204.
func (cr configResource[T, In, P]) remove(s *Server, c fuego.ContextNoBody,
	store func(ctx context.Context, scope, mscope policy.Scope, a storage.Actor, id int64) error) (any, error) {
	ctx := c.Context()
	id, m, err := s.managedID(c)
	if err != nil {
		return nil, err
	}
	scope, err := s.scopeFor(ctx, cr.resource)
	if err != nil {
		return nil, err
	}
	if err := store(ctx, scope, m.scope, actor(ctx, m), id); err != nil {
		return nil, cr.writeError(err)
	}
	c.Response().Header().Del("Content-Type")
	return nil, nil
}

// writeError maps the storage errors of a write of the resource.
func (cr configResource[T, In, P]) writeError(err error) error {
	var apiErr *Error
	switch {
	case errors.As(err, &apiErr):
		return err
	case errors.Is(err, storage.ErrNotFound):
		return newError(CodeNotFound, cr.what+" not found", nil)
	case errors.Is(err, storage.ErrInvalid):
		return newError(CodeValidationFailed, "the "+cr.what+" is not valid", invalidFields(err))
	}
	return writeError(err, cr.conflict, "name")
}

// mergedBody is the body of a change (present: its members) over the
// stored row cur: the row's JSON form with the body's members in place of
// its own, decoded into P.
func mergedBody[P any](cur any, present map[string]json.RawMessage) (P, error) {
	var in P
	raw, err := json.Marshal(cur)
	if err != nil {
		return in, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return in, err
	}
	for k, v := range present {
		fields[k] = v
	}
	merged, err := json.Marshal(fields)
	if err != nil {
		return in, err
	}
	if err := json.Unmarshal(merged, &in); err != nil {
		// A stored value of another shape (written behind the API's back):
		// the body must replace it.
		var typeErr *json.UnmarshalTypeError
		field := "body"
		if errors.As(err, &typeErr) {
			field = typeErr.Field
		}
		return in, newError(CodeValidationFailed, "the stored record is not valid", map[string]any{"fields": map[string]any{
			field: "the stored value is not of its type: replace it"}})
	}
	return in, nil
}

// Bounds of the fields of the configuration writes (docs/design.md §15).
const (
	// maxDevicesNamed bounds an imei list of an event rule or a report.
	maxDevicesNamed = 1000
	// maxListItems bounds the other lists (zones, routes, sensors, ...).
	maxListItems = 1000
	// maxNameLen bounds a name, in characters.
	maxNameLen = 100
	// maxItemLen bounds an entry of a list of names or ids.
	maxItemLen = 100
	// maxTextLen bounds a free text field (a command, a value).
	maxTextLen = 500
	// maxInteger is the largest value of an integer column (32 bits).
	maxInteger = math.MaxInt32
	// maxAddresses bounds a list of e-mail addresses.
	maxAddresses = 10
)

// fieldCheck collects the faults of a body, one per field.
type fieldCheck validation

// name checks a required name: 1 to 100 characters after trimming, one of
// them visible.
func (v fieldCheck) name(field, s string) string {
	t := strings.TrimSpace(s)
	if n := utf8.RuneCountInString(t); n < 1 || n > maxNameLen {
		v[field] = fmt.Sprintf("required: 1 to %d characters", maxNameLen)
	}
	return t
}

// text checks a string of at most max characters.
func (v fieldCheck) text(field, s string, max int) {
	if utf8.RuneCountInString(s) > max {
		v[field] = fmt.Sprintf("at most %d characters", max)
	}
}

// oneOf checks an enum value.
func (v fieldCheck) oneOf(field, s string, allowed []string) {
	if !slices.Contains(allowed, s) {
		v[field] = "one of " + strings.Join(quoted(allowed), ", ")
	}
}

// count checks an integer column's value: 0 to 2147483647.
func (v fieldCheck) count(field string, n int64) int {
	if n < 0 || n > maxInteger {
		v[field] = fmt.Sprintf("0 to %d", maxInteger)
		return 0
	}
	return int(n)
}

// list checks a list: at most max entries, each 1 to itemLen characters
// (or matching pattern, when not nil), none twice.
func (v fieldCheck) list(field string, l []string, max, itemLen int, pattern *regexp.Regexp, rule string) storage.StringList {
	if len(l) > max {
		v[field] = fmt.Sprintf("at most %d entries", max)
		return nil
	}
	seen := make(map[string]bool, len(l))
	for i, s := range l {
		switch {
		case pattern != nil && !pattern.MatchString(s), pattern == nil && (s == "" || utf8.RuneCountInString(s) > itemLen):
			v[field] = fmt.Sprintf("entry %d: %s", i, rule)
			return nil
		case seen[s]:
			v[field] = fmt.Sprintf("entry %d: %q is listed twice", i, s)
			return nil
		}
		seen[s] = true
	}
	out := storage.StringList(slices.Clone(l))
	if out == nil {
		out = storage.StringList{}
	}
	return out
}

// emails checks a list of e-mail addresses separated by commas (empty: none).
func (v fieldCheck) emails(field, s string) {
	if s == "" {
		return
	}
	parts := strings.Split(s, ",")
	if len(parts) > maxAddresses || len(s) > maxTextLen {
		v[field] = fmt.Sprintf("at most %d e-mail addresses separated by commas, %d characters", maxAddresses, maxTextLen)
		return
	}
	for _, p := range parts {
		if !storage.ValidEmail(strings.TrimSpace(p)) {
			v[field] = "e-mail addresses separated by commas, or empty"
			return
		}
	}
}

// done returns the faults, the body's text faults among them, as one
// VALIDATION_FAILED.
func (v fieldCheck) done(what string, faults textFaults) error {
	for f, reason := range faults {
		v[f] = reason
	}
	return validation(v).err("the " + what)
}

func quoted(l []string) []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// accountField checks a create's account_id (nil: the caller's own).
func (v fieldCheck) account(id *int64) {
	if id != nil && *id < 1 {
		v["account_id"] = "the id of the owning account (1 or more), or absent for the caller's own"
	}
}
