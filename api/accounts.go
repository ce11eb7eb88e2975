package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/limits"
	"github.com/fleetapi/fleetapi/tenancy"
)

// registerAccounts declares GET/POST /accounts and GET/PATCH
// /accounts/{id} (docs/design.md §9).
func (s *Server) registerAccounts(g *fuego.Server) {
	managedListRoute(g, s, "/accounts", storage.Accounts, accountTypeFilter, []fuego.RouteOption{
		fuego.OptionOperationID("get_accounts"), fuego.OptionTags("Account"),
		fuego.OptionSummary("Paged list of the accounts the caller manages"),
		fuego.OptionDescription("The accounts in the caller's management scope: an admin every account; a manager itself, " +
			"its accounts and their subaccounts; a user itself and its subaccounts; a subaccount itself. " +
			"Needs the token permission GET /accounts."),
		paramSchema(openapi3.ParameterInQuery, "type", func(s *openapi3.Schema) { s.WithEnum(anys(accountTypes)...) }),
		respondsPage(managedAccountSchema(), []storage.Account{exampleManagedAccount()}),
	})
	fuego.Get(g, "/accounts/{id}", s.getAccount, routeOptions(oneErrors(),
		[]fuego.RouteOption{
			fuego.OptionOperationID("get_account"), fuego.OptionTags("Account"),
			fuego.OptionSummary("One account the caller manages"),
			fuego.OptionDescription("An account in the caller's management scope; any other id is 404. Needs the token permission GET /accounts/{id}."),
			respondsOne(managedAccountSchema(), exampleManagedAccount()),
		}, pathID("id", "Account id.", exampleManagedAccount().ID))...)
	fuego.Post(g, "/accounts", s.postAccounts, routeOptions(writeErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("create_account"), fuego.OptionTags("Account"),
		fuego.OptionSummary("Create an account below the caller"),
		fuego.OptionDescription("Creation goes strictly downward within the fixed levels admin, manager, user, subaccount: an admin creates " +
			"managers (at the top or under an admin) and users (at the top, under an admin or under a manager), never a manager under a manager; " +
			"a manager users under itself and subaccounts under its users, a user subaccounts under itself; nobody creates an admin. " +
			"Anything else is 403 MANAGEMENT_DENIED (not_below_caller); a manager_id outside the caller's scope is 404. " +
			"The new account's rate_limit and quotas are never above the caller's own (exceeds_account, exceeds_own_quota); " +
			"omitted ones are inherited (see the fields). Needs the token permission POST /accounts and write access."),
		idempotentCreate(idempotencyKeyHeader),
		takesBody(accountInputSchema(), exampleAccountInput()),
		respondsOne(managedAccountSchema(), exampleManagedAccount()),
	})...)
	fuego.Patch(g, "/accounts/{id}", s.patchAccount, routeOptions(changeErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("update_account"), fuego.OptionTags("Account"),
		fuego.OptionSummary("Change an account the caller manages"),
		fuego.OptionDescription("Changes " + patchableFields() + " (privileges: subaccounts only). " +
			"Any other field is 400 INVALID_BODY. Nobody changes its own limits (403 MANAGEMENT_DENIED own_account), privileges " +
			"come only from those the caller holds, and quotas above the caller's own only from an admin (exceeds_own_quota). " +
			"Needs the token permission PATCH /accounts/{id} and write access."),
		takesBody(accountPatchSchema(), exampleAccountPatch()),
		respondsOne(managedAccountSchema(), exampleManagedAccount()),
	}, pathID("id", "Account id.", exampleManagedAccount().ID))...)
}

// patchableFields names the fields PATCH /accounts/{id} changes: the JSON
// fields of its body, in their declared order.
func patchableFields() string {
	var names []string
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				add(f.Type)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			names = append(names, name)
		}
	}
	add(reflect.TypeFor[AccountPatchInput]())
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// accountTypes are the values of an account's type.
var accountTypes = []string{string(tenancy.Admin), string(tenancy.Manager), string(tenancy.User), string(tenancy.Subaccount)}

// privilegeNames are the privileges a subaccount may hold (docs/design.md §2).
var privilegeNames = []string{"event_notifications", "reports"}

// usernamePattern is what POST /accounts accepts as a username: the
// grammar of docs/design.md §9 (storage.UsernamePattern).
var usernamePattern = storage.UsernamePattern

// accountTypeFilter refuses a type filter of GET /accounts that names no
// account type.
func accountTypeFilter(_ string, req *storage.ListRequest) error {
	return enumFilter(*req, "type", accountTypes, "must be one of admin, manager, user, subaccount")
}

// getAccount answers GET /accounts/{id}.
func (s *Server) getAccount(c fuego.ContextNoBody) (*Envelope[storage.Account], error) {
	ctx := c.Context()
	id, m, err := s.managedID(c)
	if err != nil {
		return nil, err
	}
	a, _, err := s.target(ctx, m, id)
	if err != nil {
		return nil, err
	}
	if err := s.withQuotas(ctx, &a); err != nil {
		return nil, err
	}
	return &Envelope[storage.Account]{Data: a}, nil
}

// withQuotas fills in the quota limits in force for a and their current
// use (docs/design.md §12), which GET and PATCH /accounts/{id} show.
func (s *Server) withQuotas(ctx context.Context, a *storage.Account) error {
	q, u, err := s.cfg.Store.AccountQuotas(ctx, *a)
	if err != nil {
		return err
	}
	a.Quotas, a.Usage = &q, &u
	return nil
}

// maxQuota is the largest quota a PATCH or a POST /accounts sets.
const maxQuota = 1_000_000_000

// quotaRule is the validation reason of a quota value out of bounds.
var quotaRule = fmt.Sprintf("a number of rows from 0 to %d", maxQuota)

// maxEmail bounds an account's e-mail address, in characters.
const maxEmail = 254

// quotaBounds declares the bounds of every quota of a quotas object
// (QuotasInput) in the OpenAPI document: each from 0 to maxQuota or null,
// as quotaValue checks.
func quotaBounds() fieldOpt {
	return schemaOpt(func(s *openapi3.Schema) {
		for _, name := range limits.AllQuotas {
			if p := s.Properties[string(name)]; p != nil && p.Value != nil {
				p.Value.WithMin(0).WithMax(maxQuota)
			}
		}
	})
}

// oneQuotaAtLeast states that PATCH /accounts/{id}'s quotas object names
// at least one quota (validation.quotas).
func oneQuotaAtLeast() fieldOpt {
	return schemaOpt(func(s *openapi3.Schema) { s.MinProps = 1 })
}

// quotaValue checks one quota's value (nil: none given) against the
// bounds, naming the field quotas.<name>; it reports whether it is valid.
func (v validation) quotaValue(name limits.Quota, val *int64, reason string) bool {
	if val != nil && (*val < 0 || *val > maxQuota) {
		v["quotas."+string(name)] = reason
		return false
	}
	return true
}

// privilegesOfSubaccounts states that only a subaccount is created with
// privileges (accountFrom): an AccountInput of another type has none.
func privilegesOfSubaccounts(s *openapi3.Schema) {
	others := []any{}
	for _, t := range accountTypes {
		if t != string(tenancy.Subaccount) {
			others = append(others, t)
		}
	}
	ifType := openapi3.NewObjectSchema()
	ifType.Required = []string{"type"}
	ifType.Properties = openapi3.Schemas{"type": openapi3.NewSchemaRef("", &openapi3.Schema{Enum: others})}
	none := uint64(0)
	then := openapi3.NewObjectSchema()
	then.Properties = openapi3.Schemas{"privileges": openapi3.NewSchemaRef("", &openapi3.Schema{MaxItems: &none})}
	s.If, s.Then = openapi3.NewSchemaRef("", ifType), openapi3.NewSchemaRef("", then)
}

// QuotasInput is the quotas object of PATCH /accounts/{id} (docs/design.md §12):
// each named quota is set to a number of rows, or returned to the platform
// default with null.
type QuotasInput struct {
	Subaccounts *int64 `json:"subaccounts,omitempty"`
	Tokens      *int64 `json:"tokens,omitempty"`
	Devices     *int64 `json:"devices,omitempty"`
	Passengers  *int64 `json:"passengers,omitempty"`
	Webhooks    *int64 `json:"webhooks,omitempty"`
	Zones       *int64 `json:"zones,omitempty"`
	Events      *int64 `json:"events,omitempty"`
}

// quotasFrom validates the quotas of a PATCH body (raw: the object as
// sent) into the overrides asked for and the decision's change: each
// quota's limit after the change, its platform default filled in for a
// quota returned to it.
func (v validation) quotas(in *QuotasInput, raw json.RawMessage, defaults limits.Quotas) (map[limits.Quota]*int64, map[string]any) {
	var present map[string]json.RawMessage
	if in == nil || json.Unmarshal(raw, &present) != nil {
		v["quotas"] = "an object of subaccounts, tokens, devices, passengers, webhooks, zones, events: each a number of rows, or null for the platform default"
		return nil, nil
	}
	if len(present) == 0 {
		v["quotas"] = "name at least one of subaccounts, tokens, devices, passengers, webhooks, zones, events"
		return nil, nil
	}
	set := map[limits.Quota]*int64{}
	change := map[string]any{}
	values := limits.Quotas{Subaccounts: in.Subaccounts, Tokens: in.Tokens, Devices: in.Devices, Passengers: in.Passengers, Webhooks: in.Webhooks, Zones: in.Zones,
		Events: in.Events}
	for _, name := range limits.AllQuotas {
		if _, ok := present[string(name)]; !ok {
			continue
		}
		val := values.Get(name)
		if !v.quotaValue(name, val, quotaRule+", or null for the platform default") {
			continue
		}
		set[name] = val
		limit := val
		if limit == nil {
			limit = defaults.Get(name)
		}
		change[string(name)] = nil
		if limit != nil {
			change[string(name)] = *limit
		}
	}
	return set, change
}

// AccountSettings are the fields of an account that POST /accounts sets
// and PATCH /accounts/{id} changes (docs/design.md §9).
type AccountSettings struct {
	Email           *string  `json:"email,omitempty"`
	Active          *bool    `json:"active,omitempty"`
	ReadOnly        *bool    `json:"read_only,omitempty"`
	AccountExpire   *bool    `json:"account_expire,omitempty"`
	AccountExpireDt *string  `json:"account_expire_dt,omitempty"`
	Privileges      []string `json:"privileges,omitempty"`
	RateLimit       *int     `json:"rate_limit,omitempty"`
	Timezone        *string  `json:"timezone,omitempty"`
}

// AccountInput is the body of POST /accounts (docs/design.md §9): the
// account's place in the tree and its settings.
type AccountInput struct {
	Username  *string `json:"username,omitempty"`
	Type      *string `json:"type,omitempty"`
	ManagerID *int64  `json:"manager_id,omitempty"`
	AccountSettings
	// Quotas are the new account's quota limits (docs/design.md §12); an
	// omitted or null one is inherited (newAccountLimits).
	Quotas *QuotasInput `json:"quotas,omitempty"`
}

// validation collects VALIDATION_FAILED reasons per field.
type validation map[string]any

func (v validation) err(what string) error {
	if len(v) == 0 {
		return nil
	}
	return newError(CodeValidationFailed, what+" is not valid", map[string]any{"fields": map[string]any(v)})
}

func (v validation) email(p *string) {
	if p != nil && *p != "" && (!storage.ValidEmail(*p) || utf8.RuneCountInString(*p) > maxEmail) {
		v["email"] = "not a valid e-mail address"
	}
}

func (v validation) date(p *string) *storage.Date {
	if p == nil {
		return nil
	}
	d, err := storage.ParseDate(*p)
	if err != nil {
		v["account_expire_dt"] = "must be a date YYYY-MM-DD from 0001-01-01 to 9999-12-31, or null"
		return nil
	}
	return &d
}

// timezone checks an account's timezone: an IANA name of the embedded
// time zone database (storage.ValidTimezone), never "Local" or empty.
func (v validation) timezone(p *string) {
	if p != nil && !storage.ValidTimezone(*p) {
		v["timezone"] = storage.TimezoneRule
	}
}

// rateLimit checks an account's rate_limit (docs/design.md §12): requests per
// minute within the bounds of a token's.
func (v validation) rateLimit(p *int) {
	if p != nil && (*p < 1 || *p > maxTokenRateLimit) {
		v["rate_limit"] = "requests per minute from 1 to 1000000, or null for none"
	}
}

func (v validation) privileges(ps []string) storage.StringList {
	seen := map[string]bool{}
	for _, p := range ps {
		if !slices.Contains(privilegeNames, p) || seen[p] {
			v["privileges"] = "each one of event_notifications, reports, at most once"
		}
		seen[p] = true
	}
	out := storage.StringList(slices.Clone(ps))
	if out == nil {
		out = storage.StringList{}
	}
	slices.Sort(out)
	return out
}

// accountFrom validates a POST /accounts body and builds the account.
func accountFrom(in AccountInput, faults textFaults) (storage.Account, error) {
	v := validation{}
	a := storage.Account{Active: true}
	if in.Username == nil || !usernamePattern.MatchString(*in.Username) {
		v["username"] = "required: " + storage.UsernameRule
	} else {
		a.Username = *in.Username
	}
	v.email(in.Email)
	a.Email = str(in.Email)
	if in.Type == nil || !slices.Contains(accountTypes, *in.Type) {
		v["type"] = "required: one of admin, manager, user, subaccount"
	} else {
		a.Type = tenancy.AccountType(*in.Type)
	}
	if in.ManagerID != nil && *in.ManagerID < 1 {
		v["manager_id"] = "an account id (1 or more), or null"
	}
	a.ManagerID = in.ManagerID
	if in.Active != nil {
		a.Active = *in.Active
	}
	a.ReadOnly = in.ReadOnly != nil && *in.ReadOnly
	a.AccountExpire = in.AccountExpire != nil && *in.AccountExpire
	a.AccountExpireDt = v.date(in.AccountExpireDt)
	a.Privileges = v.privileges(in.Privileges)
	v.rateLimit(in.RateLimit)
	a.RateLimit = in.RateLimit
	v.timezone(in.Timezone)
	a.Timezone = storage.DefaultTimezone
	if in.Timezone != nil {
		a.Timezone = *in.Timezone
	}
	if _, badType := v["type"]; !badType && len(in.Privileges) > 0 && a.Type != tenancy.Subaccount {
		// Judged against a valid type only: a bad type is its own fault,
		// not also one of privileges (one fault per field, issue 34).
		v["privileges"] = "only a subaccount has privileges"
	}
	if in.Quotas != nil {
		// the limits asked for, as overrides; newAccountLimits fills in
		// the others
		given := limits.Quotas{Subaccounts: in.Quotas.Subaccounts, Tokens: in.Quotas.Tokens, Devices: in.Quotas.Devices, Passengers: in.Quotas.Passengers, Webhooks: in.Quotas.Webhooks, Zones: in.Quotas.Zones,
			Events: in.Quotas.Events}
		for _, name := range limits.AllQuotas {
			v.quotaValue(name, given.Get(name), quotaRule+", or null to inherit")
		}
		a.SetOverrides(given)
	}
	for f, reason := range faults {
		v[f] = reason
	}
	return a, v.err("the account")
}

// newAccountLimits completes the limits of a new account a created by a
// caller whose own account has the rate limit ownRate (0: none) and the
// quota limits own in force, the platform defaults being defaults
// (docs/decisions.md, "Created accounts inherit their creator's limits"):
// an omitted rate_limit is the caller's (none when it has none), as a
// token inherits its creator's; an omitted quota is the lesser of the
// platform default and the caller's own limit, stored as an override only
// when the caller's is the lower (else the account follows the platform
// default). Limits asked for are kept: the policy judges them.
func newAccountLimits(a *storage.Account, ownRate int, own, defaults limits.Quotas) {
	if a.RateLimit == nil && ownRate > 0 {
		a.RateLimit = &ownRate
	}
	q := a.Overrides()
	for _, name := range limits.AllQuotas {
		if q.Get(name) != nil {
			continue
		}
		if mine, def := own.Get(name), defaults.Get(name); mine != nil && (def == nil || *mine < *def) {
			q.Set(name, mine)
		}
	}
	a.SetOverrides(q)
}

// accountChange is the management decision's change of an account.create:
// the new account's fields and the limits it will have (quotas in force:
// its overrides, else the platform defaults).
func accountChange(a storage.Account, defaults limits.Quotas) map[string]any {
	var manager int64
	if a.ManagerID != nil {
		manager = *a.ManagerID
	}
	var dt, rate any
	if a.AccountExpireDt != nil {
		dt = a.AccountExpireDt.String()
	}
	if a.RateLimit != nil {
		rate = *a.RateLimit
	}
	quotas := map[string]any{}
	for _, name := range limits.AllQuotas {
		limit := a.Overrides().Get(name)
		if limit == nil {
			limit = defaults.Get(name)
		}
		quotas[string(name)] = nil
		if limit != nil {
			quotas[string(name)] = *limit
		}
	}
	return map[string]any{"username": a.Username, "email": a.Email, "type": string(a.Type), "manager_id": manager,
		"active": a.Active, "read_only": a.ReadOnly, "account_expire": a.AccountExpire, "account_expire_dt": dt,
		"privileges": anys([]string(a.Privileges)), "rate_limit": rate, "quotas": quotas, "timezone": a.Timezone}
}

// ownQuotas returns the quota limits in force of the caller of m, as the
// management decision reads them (input.limits.quotas).
func (s *Server) ownQuotas(ctx context.Context, m manager) (limits.Quotas, map[string]*int64, error) {
	q, err := s.cfg.Store.QuotasOf(ctx, m.principal.Account.ID)
	if err != nil {
		return limits.Quotas{}, nil, err
	}
	own := map[string]*int64{}
	for _, name := range limits.AllQuotas {
		own[string(name)] = q.Get(name)
	}
	return q, own, nil
}

// postAccounts answers POST /accounts: 201 with the created account.
func (s *Server) postAccounts(c fuego.ContextWithBody[AccountInput]) (*Envelope[storage.Account], error) {
	ctx := c.Context()
	w, err := managementWrite[AccountInput, storage.Account]{validate: accountFrom, create: "POST /accounts",
		account: func(a storage.Account) *int64 { return a.ManagerID }}.open(s, ctx, c.Request())
	if err != nil {
		return nil, err
	}
	ownQuotas, limits, err := s.ownQuotas(ctx, w.manager)
	if err != nil {
		return nil, err
	}
	defaults := s.cfg.Store.DefaultQuotas()
	newAccountLimits(&w.value, w.manager.principal.Account.RateLimit, ownQuotas, defaults)
	if err := s.decideManagementQuotas(ctx, w.manager, policy.ActionAccountCreate, w.target, accountChange(w.value, defaults), limits); err != nil {
		return nil, err
	}
	a, replayed, err := s.cfg.Store.CreateAccount(ctx, w.scope, actor(ctx, w.manager), w.value, w.idem)
	if err != nil {
		return nil, writeError(err, "an account with this username already exists (usernames are compared case-insensitively)", "username")
	}
	return createdEnvelope(c, a, replayed), nil
}

// writeError maps the storage errors of a management write.
func writeError(err error, conflict, field string) error {
	switch {
	case errors.Is(err, storage.ErrIdempotencyKeyReused):
		return newError(CodeIdempotencyKeyReused, "the Idempotency-Key was used with another request body", nil)
	case errors.Is(err, storage.ErrConflict):
		return newError(CodeConflict, conflict, map[string]any{"field": field})
	case errors.Is(err, storage.ErrNotFound):
		return newError(CodeNotFound, "not found", nil)
	case errors.Is(err, storage.ErrInvalid):
		return newError(CodeValidationFailed, "the request is not valid", invalidFields(err))
	}
	return err
}

// AccountPatchInput is the body of PATCH /accounts/{id} (docs/design.md §9).
type AccountPatchInput struct {
	AccountSettings
	// Quotas sets quota overrides (docs/design.md §12).
	Quotas *QuotasInput `json:"quotas,omitempty"`
}

// patchFrom validates a PATCH body whose present keys are present and
// returns the patch and the decision's change (exactly the fields of the
// body).
func patchFrom(in AccountPatchInput, present map[string]json.RawMessage, faults textFaults, target storage.Account, defaults limits.Quotas) (storage.AccountPatch, map[string]any, error) {
	v := validation{}
	p := storage.AccountPatch{Email: in.Email, Active: in.Active, ReadOnly: in.ReadOnly, AccountExpire: in.AccountExpire}
	change := map[string]any{}
	if len(present) == 0 {
		v["body"] = "name at least one field to change"
	}
	for key, raw := range present {
		isNull := bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
		switch key {
		case "email":
			if isNull {
				v[key] = "a string (empty for none)"
				continue
			}
			v.email(in.Email)
			change[key] = *in.Email
		case "active", "read_only", "account_expire":
			b := map[string]*bool{"active": in.Active, "read_only": in.ReadOnly, "account_expire": in.AccountExpire}[key]
			if b == nil {
				v[key] = "must be true or false"
				continue
			}
			change[key] = *b
		case "account_expire_dt":
			p.SetExpireDt = true
			p.AccountExpireDt = v.date(in.AccountExpireDt)
			change[key] = nil
			if p.AccountExpireDt != nil {
				change[key] = p.AccountExpireDt.String()
			}
		case "privileges":
			if isNull {
				v[key] = "a list (empty for none)"
				continue
			}
			if target.Type != tenancy.Subaccount {
				v[key] = "only a subaccount has privileges"
				continue
			}
			list := v.privileges(in.Privileges)
			p.Privileges = &list
			change[key] = anys([]string(list))
		case "rate_limit":
			v.rateLimit(in.RateLimit)
			p.SetRateLimit, p.RateLimit = true, in.RateLimit
			change[key] = nil
			if in.RateLimit != nil {
				change[key] = *in.RateLimit
			}
		case "timezone":
			if isNull {
				v[key] = storage.TimezoneRule
				continue
			}
			v.timezone(in.Timezone)
			p.Timezone = in.Timezone
			change[key] = *in.Timezone
		case "quotas":
			set, c := v.quotas(in.Quotas, raw, defaults)
			if c == nil {
				continue
			}
			p.Quotas = set
			change[key] = c
		}
	}
	for f, reason := range faults {
		v[f] = reason
	}
	return p, change, v.err("the change")
}

// patchAccount answers PATCH /accounts/{id}: 200 with the account.
func (s *Server) patchAccount(c fuego.ContextWithBody[AccountPatchInput]) (*Envelope[storage.Account], error) {
	id, err := idParamOnly(c)
	if err != nil {
		return nil, err
	}
	body, err := readBody(c.Request())
	if err != nil {
		return nil, err
	}
	in, faults, err := decodeBody[AccountPatchInput](bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	var present map[string]json.RawMessage
	if err := json.Unmarshal(body, &present); err != nil {
		return nil, invalidBody("not valid JSON", nil)
	}
	ctx := c.Context()
	m, err := s.managerFrom(ctx)
	if err != nil {
		return nil, err
	}
	a, target, err := s.target(ctx, m, id)
	if err != nil {
		return nil, err
	}
	patch, change, err := patchFrom(in, present, faults, a, s.cfg.Store.DefaultQuotas())
	if err != nil {
		return nil, err
	}
	var own map[string]*int64
	if _, ok := change["quotas"]; ok {
		// The caller's own limits bound those it sets (docs/design.md §12).
		if _, own, err = s.ownQuotas(ctx, m); err != nil {
			return nil, err
		}
	}
	if err := s.decideManagementQuotas(ctx, m, policy.ActionAccountUpdate, target, change, own); err != nil {
		return nil, err
	}
	updated, err := s.cfg.Store.UpdateAccount(ctx, m.scope, actor(ctx, m), id, patch)
	if err != nil {
		return nil, writeError(err, "the change conflicts with an existing account", "email")
	}
	s.authChanged(ctx)
	if err := s.withQuotas(ctx, &updated); err != nil {
		return nil, err
	}
	return &Envelope[storage.Account]{Data: updated}, nil
}

// accountSetting is one field of AccountSettings as the account schemas
// show it: its bounds, whether a PATCH may set it to null (clearable), and
// what ManagedAccount, AccountInput and AccountPatchInput say of it.
type accountSetting struct {
	name   string
	bounds []fieldOpt
	// rules are the bounds of the two bodies (AccountInput,
	// AccountPatchInput) only: what the server checks of a value sent.
	rules                 []fieldOpt
	clearable             bool
	managed, input, patch string
}

// accountSettings declares each field of AccountSettings once, for the
// three account schemas.
func accountSettings() []accountSetting {
	return []accountSetting{
		{"email", nil, []fieldOpt{maxLen(maxEmail), pattern(emailPattern())}, false, "E-mail address, or empty.",
			"A valid e-mail address (no display name, no quoted local part), or empty.", "A valid e-mail address (no display name, no quoted local part), or empty."},
		{"active", nil, nil, false, "Whether the account may use the API.", "Defaults to true.", "Whether the account may use the API; not on one's own account."},
		{"read_only", nil, nil, false, "Whether the account is read-only.", "Defaults to false.", "Read-only; not on one's own account."},
		{"account_expire", nil, nil, false, "Whether account_expire_dt applies.", "Defaults to false.", "Whether account_expire_dt applies; not on one's own account."},
		{"account_expire_dt", []fieldOpt{typed(openapi3.TypeString), format("date"), nullable()}, []fieldOpt{pattern(datePattern)}, true,
			"Expiry day (YYYY-MM-DD), or null.", "Expiry day YYYY-MM-DD from 0001-01-01 to 9999-12-31, or null.",
			"Expiry day YYYY-MM-DD from 0001-01-01 to 9999-12-31, or null to clear it; not on one's own account."},
		{"privileges", []fieldOpt{itemEnum(privilegeNames...)}, []fieldOpt{uniqueItems()}, false, "A subaccount's privileges; empty for other accounts, which hold every privilege.",
			"Subaccounts only (400 otherwise); each held by the caller, at most once.",
			"A subaccount's privileges, replaced; each held by the caller, at most once; not on one's own account."},
		{"rate_limit", []fieldOpt{typed(openapi3.TypeInteger), minimum(1), nullable()}, []fieldOpt{maximum(maxTokenRateLimit)}, true,
			"The account's budget in requests per minute, shared by every token of the account and of its subaccounts; a token's own rate_limit only narrows it (docs/design.md §12). null: none.",
			"Requests per minute for every token of the account and of its subaccounts; not above the caller's own account limit (403 MANAGEMENT_DENIED exceeds_account). Omitted or null: the caller's own account limit, or none when it has none.",
			"Requests per minute for every token of the account and of its subaccounts, or null for none; not on one's own account, not above the caller's own account limit (403 MANAGEMENT_DENIED exceeds_account)."},
		{"timezone", nil, []fieldOpt{minLen(1), maxLen(storage.MaxTimezone), pattern(storage.TimezonePattern)}, false,
			"The IANA time zone in which the account's event rules read week_days and day_time (docs/design.md §14), for example \"Europe/Paris\"; default \"UTC\".",
			"An IANA time zone name of the embedded time zone database, for example \"Europe/Paris\" (not \"Local\"); omitted: \"UTC\".",
			"An IANA time zone name of the embedded time zone database, for example \"Europe/Paris\" (not \"Local\"); one's own account too."},
	}
}

// withSettings adds the fields of AccountSettings to fields, each
// described as describe says; a body (input) has the rules of a value
// sent, and in a PATCH (patch) a field that cannot be cleared is not
// nullable.
func withSettings(fields map[string][]fieldOpt, input, patch bool, describe func(accountSetting) string) map[string][]fieldOpt {
	for _, f := range accountSettings() {
		opts := append(slices.Clone(f.bounds), desc(describe(f)))
		if input {
			opts = append(opts, f.rules...)
		}
		if patch && !f.clearable {
			opts = append(opts, notNull())
		}
		fields[f.name] = opts
	}
	return fields
}

// managedAccountSchema is the ManagedAccount component.
func managedAccountSchema() wireType {
	return wireType{name: "ManagedAccount", value: storage.Account{}, description: "An account as the management API shows it (docs/design.md §9): real booleans, unlike GET /me.",
		fields: withSettings(map[string][]fieldOpt{
			"id":         {desc("Id of the account."), minimum(1)},
			"username":   {desc("Unique login name.")},
			"type":       {enum(accountTypes...), desc("Place in the tree: admin, manager, user or subaccount.")},
			"manager_id": {minimum(1), nullable(), desc("The account it is managed by (a subaccount's parent user); null at the top.")},
			"created_at": {desc("When the account was created.")},
			"quotas": {desc("GET and PATCH /accounts/{id} only: the quota limits in force (docs/design.md §12), the account's own overrides " +
				"or the platform defaults, each a number of rows or null for unlimited (an admin has none). subaccounts: the accounts " +
				"directly below it; tokens: its active tokens; devices, passengers, webhooks and zones: those it owns.")},
			"usage": {desc("GET and PATCH /accounts/{id} only: how much of each quota the account uses now.")},
		}, false, false, func(f accountSetting) string { return f.managed })}
}

// accountInputSchema is the AccountInput component, the body of POST
// /accounts.
func accountInputSchema() wireType {
	return wireType{name: "AccountInput", value: AccountInput{}, required: []string{"username", "type"}, complete: privilegesOfSubaccounts,
		description: "An account to create (docs/design.md §9). Absent and null fields take their defaults (active, not read-only, not expiring, " +
			"no privileges). Field names are exact; unknown and repeated keys are rejected.",
		fields: withSettings(map[string][]fieldOpt{
			"username":   {typed(openapi3.TypeString), minLen(2), maxLen(64), pattern(usernamePattern.String()), desc("Required; " + storage.UsernameRule + " (409 when another account has it in any case).")},
			"type":       {typed(openapi3.TypeString), enum(accountTypes...), desc("Required. Nobody creates an admin through the API.")},
			"manager_id": {minimum(1), desc("The account it is created under: null or a manager for an admin's manager or user, the manager for its users, the parent user for a subaccount.")},
			"quotas": {quotaBounds(), desc("The new account's quota limits (docs/design.md §12): subaccounts, tokens, devices, passengers, events, " +
				"each a number of rows from 0 to 1000000000. Never above the caller's own limit in force (403 MANAGEMENT_DENIED " +
				"exceeds_own_quota) unless the caller is an admin. An omitted or null quota (or quotas omitted or null) is the " +
				"platform default, or the caller's own limit when that is lower: a new account never has more than its creator.")},
		}, true, false, func(f accountSetting) string { return f.input })}
}

// accountPatchSchema is the AccountPatchInput component, the body of PATCH
// /accounts/{id}.
func accountPatchSchema() wireType {
	return wireType{name: "AccountPatchInput", value: AccountPatchInput{}, required: []string{}, minProperties: 1,
		description: "The fields to change (docs/design.md §9); at least one. Any other field, type, manager_id and username included, is 400 INVALID_BODY.",
		fields: withSettings(map[string][]fieldOpt{
			"quotas": {notNull(), quotaBounds(), oneQuotaAtLeast(), desc("Quota overrides (docs/design.md §12): subaccounts, tokens, devices, passengers, events, each a number of rows from 0 to " +
				"1000000000, or null to return to the platform default; at least one. Not on one's own account; never above the caller's own limit " +
				"(403 MANAGEMENT_DENIED exceeds_own_quota) unless the caller is an admin.")},
		}, true, true, func(f accountSetting) string { return f.patch })}
}

func exampleManagedAccount() storage.Account {
	d := storage.NewDate(time.Date(2027, 3, 31, 0, 0, 0, 0, time.UTC))
	return storage.Account{ID: 14, Username: "acme-ci", Email: "ci@acme.example", Type: tenancy.Subaccount, ManagerID: ptr(int64(4)),
		Active: true, AccountExpire: true, AccountExpireDt: &d, Privileges: storage.StringList{"reports"},
		Timezone: "Europe/Paris", CreatedAt: time.Date(2026, 1, 15, 9, 30, 0, 0, time.UTC)}
}

func exampleAccountInput() AccountInput {
	return AccountInput{Username: ptr("acme-ci"), Type: ptr("subaccount"), ManagerID: ptr(int64(4)),
		AccountSettings: AccountSettings{Email: ptr("ci@acme.example"), AccountExpire: ptr(true), AccountExpireDt: ptr("2027-03-31"), Privileges: []string{"reports"},
			Timezone: ptr("Europe/Paris")}}
}

func exampleAccountPatch() AccountPatchInput {
	return AccountPatchInput{AccountSettings: AccountSettings{Email: ptr("night@acme.example"), Active: ptr(false)}}
}

// readBody reads a request body whole, for a handler that looks at it
// twice (which keys a PATCH names). Over the size limit it returns the
// *http.MaxBytesError (413).
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, err
		}
		return nil, invalidBody("the body could not be read completely", nil)
	}
	return b, nil
}
