package api

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// registerTokens declares GET/POST /tokens and DELETE /tokens/{id}
// (docs/design.md §9).
func (s *Server) registerTokens(g *fuego.Server) {
	managedListRoute(g, s, "/tokens", storage.Tokens, nil, []fuego.RouteOption{
		fuego.OptionOperationID("get_tokens"), fuego.OptionTags("Account"),
		fuego.OptionSummary("Paged list of the tokens of the accounts the caller manages"),
		fuego.OptionDescription("The tokens whose account is in the caller's management scope, revoked ones included (with revoked_at). " +
			"Never shows a secret or its hash. Needs the token permission GET /tokens."),
		respondsPage(managedTokenSchema(), []storage.ManagedToken{exampleManagedToken()}),
	})
	fuego.Post(g, "/tokens", s.postTokens, routeOptions(writeErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("create_token"), fuego.OptionTags("Account"),
		fuego.OptionSummary("Create a token, its secret shown once"),
		fuego.OptionDescription("Creates a token for an account in the caller's management scope (the caller's own by default). " +
			"A new token never holds more than the token that creates it: each permission covered by the caller's, an expiry " +
			"not later and a rate limit not higher (403 MANAGEMENT_DENIED exceeds_token); an omitted or null expires_at or " +
			"rate_limit inherits the caller's. The response holds the secret once; a retry with the same Idempotency-Key " +
			"answers the token without it. Needs the token permission POST /tokens and write access."),
		idempotentCreate("Makes a retried create return the first response (without the secret); the same key with another body is 409 IDEMPOTENCY_KEY_REUSED."),
		takesBody(tokenInputSchema(), exampleTokenInput()),
		respondsOne(createdTokenSchema(), exampleCreatedToken()),
	})...)
	s.revocationRoute(g, "/tokens/{id}", "token", s.revokeToken, []fuego.RouteOption{
		fuego.OptionOperationID("revoke_token"), fuego.OptionTags("Account"),
		fuego.OptionSummary("Revoke a token"),
		fuego.OptionDescription("Revokes a token of an account in the caller's management scope (any other id is 404); " +
			"204, and 204 again for a revoked one. A token may revoke itself. The token fails from the next request on, " +
			"on every server. Needs the token permission DELETE /tokens/{id} and write access."),
	}, pathID("id", "Token id.", exampleManagedToken().ID))
}

// maxTokenRateLimit bounds a rate limit asked for through the API.
const maxTokenRateLimit = 1_000_000

// maxTokenName bounds a token's name, in characters.
const maxTokenName = 100

// tokenNameControls are the characters a token's name may not hold: the
// C0 controls and DEL.
func tokenNameControls() *unicode.RangeTable {
	return &unicode.RangeTable{R16: []unicode.Range16{{Lo: 0x00, Hi: 0x1f, Stride: 1}, {Lo: 0x7f, Hi: 0x7f, Stride: 1}}, LatinOffset: 2}
}

// TokenInput is the body of POST /tokens (docs/design.md §9).
type TokenInput struct {
	AccountID   *int64   `json:"account_id,omitempty"`
	Name        *string  `json:"name,omitempty"`
	Permissions []string `json:"permissions,omitempty"`
	ExpiresAt   *string  `json:"expires_at,omitempty"`
	RateLimit   *int     `json:"rate_limit,omitempty"`
}

// CreatedToken is the answer of POST /tokens: the token and, on the first
// response only, its secret.
type CreatedToken struct {
	storage.ManagedToken
	// Secret is the token to send as Authorization; empty (absent) on a
	// replay.
	Secret string `json:"secret,omitempty"`
}

// tokenFrom validates a POST /tokens body: the token asked for, with
// ExpiresAt nil and RateLimit 0 where the body leaves them to inherit,
// checked with storage's rule (storage.CheckManagedToken) once: storage
// stores the checked value as it is.
func tokenFrom(in TokenInput, faults textFaults, now time.Time) (storage.CheckedManagedToken, error) {
	v := validation{}
	var out storage.ManagedTokenInput
	if in.AccountID != nil {
		if *in.AccountID < 1 {
			v["account_id"] = "an account id (1 or more), or omitted for the caller's"
		}
		out.AccountID = *in.AccountID
	}
	switch {
	case in.Name == nil || strings.TrimSpace(*in.Name) == "":
		v["name"] = "required: 1 to 100 characters"
	case utf8.RuneCountInString(*in.Name) > maxTokenName || strings.ContainsFunc(*in.Name, func(r rune) bool { return unicode.Is(tokenNameControls(), r) }):
		v["name"] = "1 to 100 characters, no control characters"
	default:
		out.Name = *in.Name
	}
	if in.Permissions == nil {
		v["permissions"] = `required: a list of permissions ("*", "METHOD *" or "METHOD /route"), empty for a token that reads only /me`
	}
	out.Permissions = append([]string{}, in.Permissions...)
	if in.ExpiresAt != nil {
		t, err := time.Parse(time.RFC3339Nano, *in.ExpiresAt)
		if err != nil || t.UTC().Year() > storage.MaxYear {
			// In UTC: 9999-12-31T23:00:00-02:00 is in the year 10000,
			// which neither PostgreSQL's answer nor the JSON encoder of
			// time.Time writes back (it was a 500).
			v["expires_at"] = "an RFC 3339 time, or null to inherit the caller's expiry"
		} else {
			t = t.UTC()
			out.ExpiresAt = &t
		}
	}
	if in.RateLimit != nil {
		if *in.RateLimit < 1 || *in.RateLimit > maxTokenRateLimit {
			v["rate_limit"] = "requests per minute from 1 to 1000000, or null to inherit the caller's limit"
		} else {
			out.RateLimit = *in.RateLimit
		}
	}
	// Each field's fault under its own name, every one of them: a bad
	// permission and a past expiry are two faults (issue 34).
	checked, err := storage.CheckManagedToken(out, now)
	var bad storage.InvalidFields
	if err != nil && !errors.As(err, &bad) {
		return checked, err
	}
	for f, reason := range bad {
		if _, set := v[f]; !set {
			v[f] = reason
		}
	}
	for f, reason := range faults {
		v[f] = reason
	}
	return checked, v.err("the token")
}

// postTokens answers POST /tokens: 201 with the token and its secret.
func (s *Server) postTokens(c fuego.ContextWithBody[TokenInput]) (*Envelope[CreatedToken], error) {
	ctx := c.Context()
	w, err := managementWrite[TokenInput, storage.CheckedManagedToken]{
		validate: func(in TokenInput, faults textFaults) (storage.CheckedManagedToken, error) {
			return tokenFrom(in, faults, s.cfg.Now().UTC())
		},
		inherit: inheritLimits,
		create:  "POST /tokens",
		account: func(nt storage.CheckedManagedToken) *int64 { id := nt.Input().AccountID; return &id },
	}.open(s, ctx, c.Request())
	if err != nil {
		return nil, err
	}
	nt := w.value.Input()
	effective := nt.RateLimit
	if effective == 0 {
		effective = s.cfg.RateLimit
	}
	change := policy.TokenChange(nt.AccountID, nt.Name, nt.Permissions, nt.ExpiresAt, &effective)
	if err := s.decideManagement(ctx, w.manager, policy.ActionTokenCreate, w.target, change); err != nil {
		return nil, err
	}
	secret, created, replayed, err := s.cfg.Store.CreateManagedToken(ctx, w.scope, actor(ctx, w.manager), w.value, w.idem)
	if err != nil {
		if errors.Is(err, storage.ErrInvalid) {
			return nil, newError(CodeValidationFailed, "the token is not valid", invalidFields(err))
		}
		return nil, writeError(err, "the account already has a token of this name", "name")
	}
	return createdEnvelope(c, CreatedToken{created, secret}, replayed), nil
}

// inheritLimits completes a token asked for by the caller m from the
// caller's own token (storage.CheckedManagedToken.Inherit): the caller's
// account when none is named, omitted limits inherit the caller's (its
// expiry, its own rate limit; none: the server default, as for the
// caller), and the lineage: the new token records the token that mints it,
// whose revocation revokes it and whose budget its requests also use.
func inheritLimits(m manager, nt *storage.CheckedManagedToken) {
	nt.Inherit(m.principal.Account.ID, m.principal.Token)
}

// revokeToken is the write of DELETE /tokens/{id}: the token id of an
// account in m's management scope, revoked once the management decision
// allows it.
func (s *Server) revokeToken(ctx context.Context, m manager, id int64) error {
	tok, err := s.cfg.Store.ManagedTokenByID(ctx, m.scope, id)
	if err != nil {
		return err
	}
	_, target, err := s.target(ctx, m, tok.AccountID)
	if err != nil {
		return err
	}
	if err := s.decideManagement(ctx, m, policy.ActionTokenRevoke, target, map[string]any{"token_id": id}); err != nil {
		return err
	}
	return s.cfg.Store.RevokeManagedToken(ctx, m.scope, actor(ctx, m), id)
}

// managedTokenSchema is the ManagedToken component.
func managedTokenSchema() wireType {
	return wireType{name: "ManagedToken", value: storage.ManagedToken{}, description: "A token as the management API shows it (docs/design.md §9): never its secret or hash.",
		fields: tokenFields()}
}

func tokenFields() map[string][]fieldOpt {
	return map[string][]fieldOpt{
		"id":           {desc("Id of the token."), minimum(1)},
		"account_id":   {desc("The account the token belongs to."), minimum(1)},
		"name":         {desc("Name, unique per account.")},
		"permissions":  {desc(`The routes it may call: "*", "METHOD *" or "METHOD /route".`)},
		"expires_at":   {nullable(), desc("When it stops working; null: never.")},
		"revoked_at":   {nullable(), desc("When it was revoked; null: not revoked.")},
		"last_used_at": {nullable(), desc("When it was last used (updated at most once a minute); null: never.")},
		"rate_limit":   {minimum(1), nullable(), desc("Requests per minute; null: the server default.")},
		"parent_token_id": {minimum(1), nullable(), desc("The token that minted it (POST /tokens): revoking that token revokes this one, " +
			"and this token's requests also count against that token's rate limit, and its minters'. Null for a token made by an operator (command line, import).")},
		"created_at": {desc("When it was created.")},
	}
}

// createdTokenSchema is the CreatedToken component.
func createdTokenSchema() wireType {
	f := tokenFields()
	f["secret"] = []fieldOpt{pattern(`^flt_[0-9A-Za-z]{32}$`), desc("The token to send as Authorization, shown once: absent when an Idempotency-Key replays the create.")}
	return wireType{name: "CreatedToken", value: CreatedToken{}, description: "A created token (docs/design.md §9) with its secret, shown once.", fields: f}
}

// tokenInputSchema is the TokenInput component, the body of POST /tokens.
func tokenInputSchema() wireType {
	return wireType{name: "TokenInput", value: TokenInput{}, required: []string{"name", "permissions"},
		description: "A token to create (docs/design.md §9). Field names are exact; unknown and repeated keys are rejected.",
		fields: map[string][]fieldOpt{
			"account_id": {minimum(1), desc("The account it belongs to, in the caller's management scope; the caller's when omitted.")},
			"name": {typed(openapi3.TypeString), minLen(1), maxLen(maxTokenName), pattern(tokenNamePattern()),
				desc("Required; unique per account; not blank, no control characters.")},
			"permissions": {maxItems(tenancy.MaxPermissions), uniqueItems(), itemEnum(permissionValues()...),
				desc(`Required; each "*", "METHOD *" or "METHOD /route" naming a route of the API and covered by the caller's token; at most 64, none twice (400 VALIDATION_FAILED).`)},
			"expires_at": {typed(openapi3.TypeString), schemaOpt(expirySchema), nullable(),
				desc("In the future (400 VALIDATION_FAILED otherwise: the one rule of this body relative to the time of the request) and not after the caller's expiry; omitted or null: the caller's.")},
			"rate_limit": {typed(openapi3.TypeInteger), minimum(1), maximum(maxTokenRateLimit), nullable(), desc("Requests per minute, not above the caller's; omitted or null: the caller's.")},
		}}
}

func exampleManagedToken() storage.ManagedToken {
	exp := time.Date(2027, 1, 15, 0, 0, 0, 0, time.UTC)
	return storage.ManagedToken{ID: 21, AccountID: 14, Name: "acme-ci-readonly", Permissions: storage.StringList{"GET *"},
		ExpiresAt: &exp, RateLimit: ptr(60), ParentTokenID: ptr(int64(11)), CreatedAt: time.Date(2026, 1, 15, 9, 30, 0, 0, time.UTC)}
}

func exampleCreatedToken() CreatedToken {
	return CreatedToken{exampleManagedToken(), "flt_" + strings.Repeat("Ab3", 10) + "x9"}
}

func exampleTokenInput() TokenInput {
	return TokenInput{AccountID: ptr(int64(14)), Name: ptr("acme-ci-readonly"), Permissions: []string{"GET *"},
		ExpiresAt: ptr("2027-01-15T00:00:00Z"), RateLimit: ptr(60)}
}
