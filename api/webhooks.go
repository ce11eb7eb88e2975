package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/rules"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/webhook"
)

// maxWebhookDescription bounds a webhook's description, in characters
// (the column's CHECK).
const maxWebhookDescription = 500

// WebhookInput is the body of POST /webhooks and PATCH /webhooks/{id}
// (docs/design.md §14, Webhooks). On a create, url is required and absent
// or null fields take their defaults (description "", types [] meaning
// every type, active true); a PATCH names at least one field, none null.
type WebhookInput struct {
	URL         *string  `json:"url,omitempty"`
	Description *string  `json:"description,omitempty"`
	Types       []string `json:"types,omitempty"`
	Active      *bool    `json:"active,omitempty"`
}

// webhookValue is a checked webhook body: what is stored, and what an
// Idempotency-Key's request hash is of.
type webhookValue struct {
	URL         string   `json:"url"`
	Description string   `json:"description"`
	Types       []string `json:"types"`
	Active      bool     `json:"active"`
}

// CreatedWebhook is the answer of POST /webhooks: the webhook and, once,
// its secret (absent from a replay of the same Idempotency-Key).
type CreatedWebhook struct {
	storage.Webhook
	// Secret is the signing secret, "whsec_" + base64; shown only here.
	Secret string `json:"secret,omitempty"`
}

// RotatedWebhook is the answer of POST /webhooks/{id}/rotate-secret: the
// webhook, its new secret (shown once) and until when the replaced secret
// still signs beside it.
type RotatedWebhook struct {
	storage.Webhook
	Secret                  string    `json:"secret"`
	PreviousSecretExpiresAt time.Time `json:"previous_secret_expires_at"`
}

// checkWebhookFields checks the fields of a webhook body that are present
// (set: their values, non-nil), adding a reason per failing field to v.
func (s *Server) checkWebhookFields(v validation, url, description *string, types *[]string) {
	if url != nil {
		if err := s.cfg.WebhookURLs.CheckURL(*url); err != nil {
			var ue *webhook.URLError
			if errors.As(err, &ue) {
				v["url"] = ue.Reason
			} else {
				v["url"] = "not a URL deliveries may go to"
			}
		}
	}
	if description != nil && utf8.RuneCountInString(*description) > maxWebhookDescription {
		v["description"] = fmt.Sprintf("at most %d characters", maxWebhookDescription)
	}
	if types != nil {
		known := rules.NotificationTypes()
		seen := map[string]bool{}
		for i, t := range *types {
			switch {
			case !slices.Contains(known, t):
				v["types"] = fmt.Sprintf("item %d is not a notification type (one of %v)", i, known)
			case seen[t]:
				v["types"] = fmt.Sprintf("%q is listed twice", t)
			}
			if v["types"] != nil {
				break
			}
			seen[t] = true
		}
	}
}

// webhookCreateFrom checks the body of POST /webhooks into the value
// stored, its defaults applied.
func (s *Server) webhookCreateFrom(in WebhookInput, faults textFaults) (webhookValue, error) {
	w := webhookValue{Description: str(in.Description), Types: in.Types, Active: in.Active == nil || *in.Active}
	if w.Types == nil {
		w.Types = []string{}
	}
	v := validation{}
	if in.URL == nil {
		v["url"] = "required"
	} else {
		w.URL = *in.URL
	}
	s.checkWebhookFields(v, in.URL, in.Description, &w.Types)
	for f, reason := range faults {
		v[f] = reason
	}
	return w, v.err("the webhook")
}

// webhookKeys returns the key ring that seals secrets, or the 503 that
// says the server has none (FLEET_WEBHOOK_KEY unset).
func (s *Server) webhookKeys() (*webhook.KeyRing, error) {
	if s.cfg.WebhookKeys == nil {
		e := newError(CodeUnavailable, "webhooks need FLEET_WEBHOOK_KEY on the server; the operator has not set it",
			map[string]any{"reason": "webhook_key_unset"})
		e.RetryAfter = 3600 // a configuration change, not a moment's trouble
		return nil, e
	}
	return s.cfg.WebhookKeys, nil
}

// newSealedSecret makes a secret for the webhook id: its wire form, shown
// once, and the raw secret sealed with the id as associated data.
func newSealedSecret(keys *webhook.KeyRing, id int64) (string, []byte, error) {
	wire, raw, err := webhook.NewSecret()
	if err != nil {
		return "", nil, err
	}
	sealed, err := keys.Seal(raw, []byte(strconv.FormatInt(id, 10)))
	clear(raw)
	if err != nil {
		return "", nil, err
	}
	return wire, sealed, nil
}

// webhookWrite is what every webhook write starts from: the caller's
// webhooks scope and the actor its audit names.
func (s *Server) webhookWrite(ctx context.Context) (policy.Scope, storage.Actor, error) {
	scope, err := s.scopeFor(ctx, storage.Webhooks.Resource())
	if err != nil {
		return policy.Scope{}, storage.Actor{}, err
	}
	a, err := callActor(ctx)
	return scope, a, err
}

// callActor is the caller as an audit row records it.
func callActor(ctx context.Context) (storage.Actor, error) {
	cl, ok := callFrom(ctx)
	if !ok {
		return storage.Actor{}, errors.New("no authenticated call in context")
	}
	return actor(ctx, manager{call: cl}), nil
}

// postWebhooks answers POST /webhooks: 201 with the webhook and its secret.
func (s *Server) postWebhooks(c fuego.ContextWithBody[WebhookInput]) (*Envelope[CreatedWebhook], error) {
	ctx := c.Context()
	o, err := managementWrite[WebhookInput, webhookValue]{validate: s.webhookCreateFrom, create: "POST /webhooks"}.open(s, ctx, c.Request())
	if err != nil {
		return nil, err
	}
	w, idem, owner := o.value, o.idem, o.principal.Account.ID
	keys, err := s.webhookKeys()
	if err != nil {
		return nil, err
	}
	scope, err := s.scopeFor(ctx, storage.Webhooks.Resource())
	if err != nil {
		return nil, err
	}
	id, err := s.cfg.Store.NewWebhookID(ctx)
	if err != nil {
		return nil, err
	}
	secret, sealed, err := newSealedSecret(keys, id)
	if err != nil {
		return nil, err
	}
	a, err := callActor(ctx)
	if err != nil {
		return nil, err
	}
	created, replayed, err := s.cfg.Store.CreateWebhook(ctx, scope, a, storage.NewWebhook{ID: id, AccountID: owner, URL: w.URL,
		Description: w.Description, Types: w.Types, Active: w.Active, Sealed: sealed}, idem)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, newError(CodeInvalidToken, "the caller's account was erased: its tokens no longer authenticate", nil)
	case err != nil:
		return nil, writeError(err, "conflict", "url")
	}
	if replayed {
		secret = ""
	}
	return createdEnvelope(c, CreatedWebhook{created, secret}, replayed), nil
}

// getWebhook answers GET /webhooks/{id}.
func (s *Server) getWebhook(c fuego.ContextNoBody) (*Envelope[storage.Webhook], error) {
	id, err := idParamOnly(c)
	if err != nil {
		return nil, err
	}
	ctx := c.Context()
	scope, err := s.scopeFor(ctx, storage.Webhooks.Resource())
	if err != nil {
		return nil, err
	}
	w, err := s.cfg.Store.WebhookByID(ctx, scope, id)
	if err != nil {
		return nil, notFoundAs("webhook", err)
	}
	return &Envelope[storage.Webhook]{Data: w}, nil
}

// patchWebhook answers PATCH /webhooks/{id}: 200 with the webhook.
func (s *Server) patchWebhook(c fuego.ContextWithBody[WebhookInput]) (*Envelope[storage.Webhook], error) {
	id, err := idParamOnly(c)
	if err != nil {
		return nil, err
	}
	// The body is read once and decoded twice: strictly (validBody) and
	// for the keys it names (a PATCH names at least one, none null).
	r := c.Request()
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	p, err := validBody(r, func(in WebhookInput, faults textFaults) (storage.WebhookPatch, error) {
		var present map[string]json.RawMessage
		if err := json.Unmarshal(body, &present); err != nil {
			return storage.WebhookPatch{}, invalidBody("not valid JSON", nil)
		}
		if len(present) == 0 {
			return storage.WebhookPatch{}, newError(CodeValidationFailed, "the webhook is not valid",
				map[string]any{"fields": map[string]any{"body": "name at least one of url, description, types, active"}})
		}
		v := validation{}
		for key, raw := range present {
			if string(raw) == "null" {
				v[key] = "must not be null"
			}
		}
		p := storage.WebhookPatch{URL: in.URL, Description: in.Description, Active: in.Active}
		if _, ok := present["types"]; ok && in.Types != nil {
			p.Types = &in.Types
		}
		s.checkWebhookFields(v, p.URL, p.Description, p.Types)
		for f, reason := range faults {
			v[f] = reason
		}
		return p, v.err("the webhook")
	})
	if err != nil {
		return nil, err
	}
	ctx := c.Context()
	scope, a, err := s.webhookWrite(ctx)
	if err != nil {
		return nil, err
	}
	w, err := s.cfg.Store.UpdateWebhook(ctx, scope, a, id, p)
	switch {
	case errors.Is(err, storage.ErrConflict):
		return nil, newError(CodeConflict, "the webhook has no secret (it was imported): rotate its secret before activating it",
			map[string]any{"field": "active"})
	case err != nil:
		return nil, notFoundAs("webhook", writeError(err, "conflict", "url"))
	}
	return &Envelope[storage.Webhook]{Data: w}, nil
}

// deleteWebhook answers DELETE /webhooks/{id}: 204.
func (s *Server) deleteWebhook(c fuego.ContextNoBody) (any, error) {
	id, err := idParamOnly(c)
	if err != nil {
		return nil, err
	}
	ctx := c.Context()
	scope, a, err := s.webhookWrite(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.cfg.Store.DeleteWebhook(ctx, scope, a, id); err != nil {
		return nil, notFoundAs("webhook", err)
	}
	c.Response().Header().Del("Content-Type")
	return nil, nil
}

// rotateWebhookSecret answers POST /webhooks/{id}/rotate-secret: 200 with
// the new secret, shown once.
func (s *Server) rotateWebhookSecret(c fuego.ContextNoBody) (*Envelope[RotatedWebhook], error) {
	id, err := idParamOnly(c)
	if err != nil {
		return nil, err
	}
	ctx := c.Context()
	keys, err := s.webhookKeys()
	if err != nil {
		return nil, err
	}
	scope, a, err := s.webhookWrite(ctx)
	if err != nil {
		return nil, err
	}
	secret, sealed, err := newSealedSecret(keys, id)
	if err != nil {
		return nil, err
	}
	w, until, err := s.cfg.Store.RotateWebhookSecret(ctx, scope, a, id, sealed)
	if err != nil {
		return nil, notFoundAs("webhook", err)
	}
	return &Envelope[RotatedWebhook]{Data: RotatedWebhook{w, secret, until.UTC()}}, nil
}

// testWebhook answers POST /webhooks/{id}/test: 202 with the delivery
// queued.
func (s *Server) testWebhook(c fuego.ContextNoBody) (*Envelope[storage.WebhookDelivery], error) {
	id, err := idParamOnly(c)
	if err != nil {
		return nil, err
	}
	ctx := c.Context()
	scope, a, err := s.webhookWrite(ctx)
	if err != nil {
		return nil, err
	}
	d, err := s.cfg.Store.TestWebhook(ctx, scope, a, id)
	if errors.Is(err, storage.ErrConflict) {
		return nil, newError(CodeConflict, "a test delivery of this webhook is still pending: follow it in GET /webhooks/{id}/deliveries", nil)
	}
	if err != nil {
		return nil, notFoundAs("webhook", err)
	}
	return &Envelope[storage.WebhookDelivery]{Data: d}, nil
}

// deliveryIDParam parses the path parameter delivery_id (1 or more).
func deliveryIDParam(c pathRequest) (int64, error) {
	id, err := parseInt("delivery_id", c.PathParam("delivery_id"), 1, 1<<63-1)
	if err != nil {
		return 0, err
	}
	return id, nil
}

// retryDelivery answers POST /webhooks/{id}/deliveries/{delivery_id}/retry:
// the delivery pending again, due now.
func (s *Server) retryDelivery(c fuego.ContextNoBody) (*Envelope[storage.WebhookDelivery], error) {
	id, err := idParam(c)
	if err != nil {
		return nil, err
	}
	did, err := deliveryIDParam(c)
	if err != nil {
		return nil, err
	}
	if err := noParams(c.Request().URL.RawQuery); err != nil {
		return nil, err
	}
	ctx := c.Context()
	scope, a, err := s.webhookWrite(ctx)
	if err != nil {
		return nil, err
	}
	d, err := s.cfg.Store.RetryDelivery(ctx, scope, a, id, did)
	switch {
	case errors.Is(err, storage.ErrConflict):
		return nil, newError(CodeConflict, "the delivery is being sent at this moment; retry when the attempt has ended", nil)
	case errors.Is(err, storage.ErrNotFound):
		return nil, newError(CodeNotFound, "delivery not found", nil)
	case err != nil:
		return nil, err
	}
	return &Envelope[storage.WebhookDelivery]{Data: d}, nil
}

// getDeliveries answers GET /webhooks/{id}/deliveries: a page of the
// webhook's deliveries, newest first, filtered by state.
func (s *Server) getDeliveries(c fuego.ContextNoBody) (*Envelope[[]storage.WebhookDelivery], error) {
	id, err := idParam(c)
	if err != nil {
		return nil, err
	}
	q, perr := parseQuery(c.Request().URL.RawQuery)
	if perr != nil {
		return nil, perr
	}
	p := storage.DeliveryPage{Page: 1, PerPage: storage.DefaultPerPage}
	for _, name := range slices.Sorted(maps.Keys(q)) {
		vs := q[name]
		if len(vs) != 1 {
			return nil, invalidParam(name, "given more than once")
		}
		var e *Error
		switch name {
		case paramPage:
			p.Page, e = parseBoundedInt(name, vs[0], 1, storage.MaxPage)
		case paramPerPage:
			p.PerPage, e = parseBoundedInt(name, vs[0], 1, storage.MaxPerPage)
		case "state":
			if !slices.Contains(storage.DeliveryStates(), vs[0]) {
				e = invalidParam(name, fmt.Sprintf("must be one of %v", storage.DeliveryStates()))
			}
			p.State = vs[0]
		default:
			e = invalidParam(name, "unknown parameter")
		}
		if e != nil {
			return nil, e
		}
	}
	ctx := c.Context()
	scope, err := s.scopeFor(ctx, storage.Webhooks.Resource())
	if err != nil {
		return nil, err
	}
	rows, total, err := s.cfg.Store.WebhookDeliveries(ctx, scope, id, p)
	if err != nil {
		return nil, notFoundAs("webhook", err)
	}
	per := int64(p.PerPage)
	return &Envelope[[]storage.WebhookDelivery]{Data: rows,
		Meta: Meta{Paging: &Paging{Page: p.Page, PerPage: p.PerPage, Total: total, Pages: (total + per - 1) / per}}}, nil
}
