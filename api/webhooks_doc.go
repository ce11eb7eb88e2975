package api

import (
	"context"
	"net/http"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/rules"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/webhook"
)

// webhookPrivilege is what every webhook operation says of its access.
const webhookPrivilege = "; a subaccount also needs the event_notifications privilege."

// registerWebhooks declares the /webhooks routes (docs/design.md §14,
// Webhooks): the list and one by id in the webhooks scope, the writes,
// the secret's rotation, the test delivery, the deliveries and their retry.
func (s *Server) registerWebhooks(g *fuego.Server) {
	path := "/" + string(storage.Webhooks.Resource())
	one := func(name string) []fuego.RouteOption { return pathID(name, "Webhook id.", exampleWebhook().ID) }
	scope := func(ctx context.Context) (policy.Scope, error) { return s.scopeFor(ctx, storage.Webhooks.Resource()) }
	fuego.Get(g, path, listHandler(s, path, storage.Webhooks, same[storage.Webhook], nil, scope),
		routeOptions(authErrors(), listParams(storage.Webhooks.Descriptor, path), []fuego.RouteOption{
			fuego.OptionOperationID("get_webhooks"), fuego.OptionTags("Events"),
			fuego.OptionSummary("Paged list of webhooks"),
			fuego.OptionDescription("The webhooks the caller may see: an admin every webhook, a manager or user its own and those of " +
				"the accounts it manages directly (a manager its users', a user its subaccounts'), a subaccount its own. Never a secret. " +
				"Needs the token permission GET /webhooks" + webhookPrivilege),
			respondsPage(webhookSchema(), []storage.Webhook{exampleWebhook()}),
		})...)
	fuego.Post(g, path, s.postWebhooks, routeOptions(writeErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("create_webhook"), fuego.OptionTags("Events"),
		fuego.OptionSummary("Register a webhook, its secret shown once"),
		fuego.OptionDescription("Registers an endpoint that receives the caller's notifications (Standard Webhooks 1.0): the webhook " +
			"belongs to the caller's account (a subaccount's to the subaccount) and counts against its webhooks quota (403 QUOTA_EXCEEDED). " +
			"url must be https (http only where the operator allows it) to a public host: loopback, private, link-local and other " +
			"internal addresses, user information and URLs over 2048 bytes are refused (400 VALIDATION_FAILED naming url, with the reason). " +
			"The response holds the signing secret once; a retry with the same Idempotency-Key answers the webhook without it " +
			"(rotate the secret if it was lost). 503 SERVICE_UNAVAILABLE (details.reason webhook_key_unset) when the server has no " +
			"FLEET_WEBHOOK_KEY. Needs the token permission POST /webhooks and write access" + webhookPrivilege),
		idempotentCreate("Makes a retried create return the first response (without the secret); the same key with another body is 409 IDEMPOTENCY_KEY_REUSED."),
		takesBody(webhookInputSchema(), exampleWebhookInput()),
		respondsOne(createdWebhookSchema(), CreatedWebhook{exampleWebhook(), exampleSecret}),
	})...)
	fuego.Get(g, path+"/{id}", s.getWebhook, routeOptions(oneErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("get_webhook"), fuego.OptionTags("Events"),
		fuego.OptionSummary("Read one webhook"),
		fuego.OptionDescription("One webhook by id, never its secret. A webhook outside the caller's scope is 404, like one that " +
			"does not exist. Needs the token permission GET /webhooks/{id}" + webhookPrivilege),
		respondsOne(webhookSchema(), exampleWebhook()),
	}, one("id"))...)
	fuego.Patch(g, path+"/{id}", s.patchWebhook, routeOptions(changeErrors(), errorResponses(http.StatusConflict), []fuego.RouteOption{
		fuego.OptionOperationID("update_webhook"), fuego.OptionTags("Events"),
		fuego.OptionSummary("Change a webhook"),
		fuego.OptionDescription("Changes url, description, types or active (at least one, none null). Making an inactive webhook " +
			"active again clears disabled_reason and the failure streak; an imported webhook (no secret) is 409 CONFLICT until its secret is rotated. Audited (webhook.update). Needs the token permission " +
			"PATCH /webhooks/{id} and write access" + webhookPrivilege),
		takesBody(webhookPatchSchema(), WebhookInput{Active: ptr(true)}),
		respondsOne(webhookSchema(), exampleWebhook()),
	}, one("id"))...)
	noContent := []fuego.RouteOption{fuego.OptionDefaultStatusCode(http.StatusNoContent), respondsNoContent()}
	fuego.Delete(g, path+"/{id}", s.deleteWebhook, routeOptions(oneErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("delete_webhook"), fuego.OptionTags("Events"),
		fuego.OptionSummary("Delete a webhook"),
		fuego.OptionDescription("Deletes the webhook and its queued deliveries (a delivery being sent finishes first). 204. " +
			"Audited (webhook.delete). Needs the token permission DELETE /webhooks/{id} and write access" + webhookPrivilege),
	}, noContent, one("id"))...)
	fuego.Post(g, path+"/{id}/rotate-secret", s.rotateWebhookSecret, routeOptions(oneErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("rotate_webhook_secret"), fuego.OptionTags("Events"),
		fuego.OptionSummary("Rotate a webhook's secret, the new one shown once"),
		fuego.OptionDescription("Makes a new signing secret, shown once in the answer. The replaced secret keeps signing beside " +
			"it for 24 hours (two v1 signatures per delivery) until previous_secret_expires_at; a second rotation within that time " +
			"drops the older one. Takes no body. Audited (webhook.rotate, never a secret). 503 SERVICE_UNAVAILABLE (details.reason " +
			"webhook_key_unset) when the server has no FLEET_WEBHOOK_KEY. Needs the token permission POST /webhooks/{id}/rotate-secret " +
			"and write access" + webhookPrivilege),
		respondsOne(rotatedWebhookSchema(), RotatedWebhook{exampleWebhook(), exampleSecret, exampleWebhook().UpdatedAt.Add(24 * time.Hour)}),
	}, one("id"))...)
	fuego.Post(g, path+"/{id}/test", s.testWebhook, routeOptions(oneErrors(), errorResponses(http.StatusConflict), []fuego.RouteOption{
		fuego.OptionOperationID("test_webhook"), fuego.OptionTags("Events"),
		fuego.OptionSummary("Queue a test delivery"),
		fuego.OptionDescription("Queues a delivery of type webhook.test (no notification), due now, and answers 202 with it; " +
			"follow it in GET /webhooks/{id}/deliveries. One test delivery is pending at a time: another while one is pending is " +
			"409 CONFLICT. Takes no body. Audited (webhook.test). Needs the token permission " +
			"POST /webhooks/{id}/test and write access" + webhookPrivilege),
		fuego.OptionDefaultStatusCode(http.StatusAccepted),
		respondsOne(deliverySchema(), exampleDelivery()),
	}, one("id"))...)
	q := openapi3.ParameterInQuery
	fuego.Get(g, path+"/{id}/deliveries", s.getDeliveries, routeOptions(oneErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("get_webhook_deliveries"), fuego.OptionTags("Events"),
		fuego.OptionSummary("Paged list of a webhook's deliveries"),
		fuego.OptionDescription("The deliveries of one webhook, newest first, each with its last 20 attempts (time, status, " +
			"duration, error). state filters exactly. A webhook outside the caller's scope is 404. Needs the token permission " +
			"GET /webhooks/{id}/deliveries" + webhookPrivilege),
		pagingParams(),
		fuego.OptionQuery("state", "Only the deliveries in this state."),
		paramSchema(q, "state", func(s *openapi3.Schema) { s.WithEnum(anys(storage.DeliveryStates())...) }),
		respondsPage(deliverySchema(), []storage.WebhookDelivery{exampleDelivery()}),
	}, one("id"))...)
	fuego.Post(g, path+"/{id}/deliveries/{delivery_id}/retry", s.retryDelivery, routeOptions(oneErrors(), errorResponses(http.StatusConflict), []fuego.RouteOption{
		fuego.OptionOperationID("retry_webhook_delivery"), fuego.OptionTags("Events"),
		fuego.OptionSummary("Send a delivery again"),
		fuego.OptionDescription("Makes the delivery pending again, due now, its attempts kept (a pending one is only made due now). " +
			"A delivery of another webhook is 404, like one that does not exist; one being sent at this moment is 409 CONFLICT. " +
			"Takes no body. Audited (webhook.retry). Needs the token permission POST /webhooks/{id}/deliveries/{delivery_id}/retry " +
			"and write access" + webhookPrivilege),
		respondsOne(deliverySchema(), exampleDelivery()),
	}, one("id"), pathID("delivery_id", "Delivery id.", exampleDelivery().ID))...)
}

// exampleSecret is the secret of the examples (not a real one).
const exampleSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// webhookFields are the fields of the Webhook component.
func webhookFields() map[string][]fieldOpt {
	return map[string][]fieldOpt{
		"id":              {desc("Id of the webhook."), minimum(1)},
		"account_id":      {desc("The account it belongs to: the one that registered it."), minimum(1)},
		"url":             {desc("Where deliveries are sent (POST)."), maxLen(webhook.MaxURLLength)},
		"description":     {desc("Free text."), maxLen(maxWebhookDescription)},
		"types":           {desc("The notification types delivered; empty: every type."), itemEnum(rules.NotificationTypes()...)},
		"active":          {desc("Whether deliveries are sent; false after 5 days of failures (disabled_reason says why).")},
		"disabled_reason": {desc("Why the server disabled the webhook, or null."), nullable()},
		"created_at":      {desc("When the webhook was registered.")},
		"updated_at":      {desc("When it last changed.")},
	}
}

// webhookSchema is the Webhook component.
func webhookSchema() wireType {
	return wireType{name: "Webhook", value: storage.Webhook{}, description: "An endpoint receiving notifications (docs/design.md §14): never its secret.",
		fields: webhookFields()}
}

// createdWebhookSchema is the CreatedWebhook component.
func createdWebhookSchema() wireType {
	f := webhookFields()
	f["secret"] = []fieldOpt{desc("The signing secret, whsec_ and base64; in the first answer only (absent from a keyed replay).")}
	return wireType{name: "CreatedWebhook", value: CreatedWebhook{}, description: "A webhook just registered, with its secret shown once.", fields: f}
}

// rotatedWebhookSchema is the RotatedWebhook component.
func rotatedWebhookSchema() wireType {
	f := webhookFields()
	f["secret"] = []fieldOpt{desc("The new signing secret, whsec_ and base64; shown only here.")}
	f["previous_secret_expires_at"] = []fieldOpt{desc("Until when the replaced secret still signs beside the new one.")}
	return wireType{name: "RotatedWebhook", value: RotatedWebhook{}, description: "A webhook whose secret was just rotated.", fields: f}
}

// webhookInputFields are the fields of the webhook bodies.
func webhookInputFields(create bool) map[string][]fieldOpt {
	def := func(d string) string {
		if create {
			return d
		}
		return ""
	}
	return map[string][]fieldOpt{
		"url": {typed(openapi3.TypeString), minLen(1), maxLen(webhook.MaxURLLength),
			desc("https URL of a public host (http only where the operator allows it); no user information." + def(" Required."))},
		"description": {maxLen(maxWebhookDescription), desc("Free text, at most 500 characters." + def(" Defaults to empty."))},
		"types": {itemEnum(rules.NotificationTypes()...), uniqueItems(), maxItems(uint64(len(rules.NotificationTypes()))),
			desc("Notification types to deliver, each once; empty: every type." + def(" Defaults to empty."))},
		"active": {desc("Whether deliveries are sent." + def(" Defaults to true."))},
	}
}

// webhookInputSchema is the WebhookInput component, the body of POST /webhooks.
func webhookInputSchema() wireType {
	return wireType{name: "WebhookInput", value: WebhookInput{}, required: []string{"url"},
		description: "A webhook to register (docs/design.md §14). Absent and null optional fields take their defaults. Field names are " +
			"exact; unknown and repeated keys are rejected.", fields: webhookInputFields(true)}
}

// webhookPatchSchema is the WebhookPatch component, the body of PATCH /webhooks/{id}.
func webhookPatchSchema() wireType {
	f := webhookInputFields(false)
	for name := range f {
		f[name] = append(f[name], notNull())
	}
	return wireType{name: "WebhookPatch", value: WebhookInput{}, required: []string{}, minProperties: 1,
		description: "A change of a webhook: at least one field, none null; unknown and repeated keys are rejected.", fields: f}
}

// deliverySchema is the WebhookDelivery component.
func deliverySchema() wireType {
	return wireType{name: "WebhookDelivery", value: storage.WebhookDelivery{}, description: "One message to a webhook and its last attempts (docs/design.md §14).",
		fields: map[string][]fieldOpt{
			"id":              {desc("Id of the delivery."), minimum(1)},
			"webhook_id":      {desc("The webhook it goes to."), minimum(1)},
			"notification_id": {desc("The notification delivered; null for a test."), minimum(1), nullable()},
			"msg_id":          {desc("The webhook-id header: the same on every attempt.")},
			"type":            {desc("The notification's type, or webhook.test.")},
			"state":           {enum(storage.DeliveryStates()...), desc("pending (due at next_at), succeeded, failed (every attempt failed) or skipped (the owner could no longer list the notification).")},
			"attempts":        {desc("Attempts made."), minimum(0)},
			"next_at":         {desc("When a pending delivery is due.")},
			"created_at":      {desc("When it was queued.")},
			"last_status":     {desc("The HTTP status of the last attempt; null without an answer or an attempt."), nullable()},
			"last_error":      {desc("The last attempt's error; empty on success or before an attempt.")},
			"attempts_log": {desc("The last 20 attempts, oldest first."),
				schemaOpt(func(s *openapi3.Schema) { s.Items = componentRef("WebhookAttempt") })},
		},
		uses: []wireType{{name: "WebhookAttempt", value: storage.WebhookAttempt{}, description: "One attempt to send a delivery.",
			fields: map[string][]fieldOpt{
				"time":        {desc("When the attempt started.")},
				"status":      {desc("The HTTP status answered; null without an answer."), nullable()},
				"duration_ms": {desc("How long it took, in milliseconds."), minimum(0)},
				"error":       {desc("What failed; empty on success.")},
			}}}}
}

// exampleWebhook is the webhook of the examples.
func exampleWebhook() storage.Webhook {
	at := time.Date(2026, 1, 15, 9, 30, 0, 0, time.UTC)
	return storage.Webhook{ID: 12, AccountID: 14, URL: "https://hooks.acme.example/fleet", Description: "Dispatch board",
		Types: storage.StringList{rules.Overspeed, rules.SOS}, Active: true, CreatedAt: at, UpdatedAt: at}
}

// exampleWebhookInput is the request example of POST /webhooks.
func exampleWebhookInput() WebhookInput {
	return WebhookInput{URL: ptr("https://hooks.acme.example/fleet"), Description: ptr("Dispatch board"),
		Types: []string{rules.Overspeed, rules.SOS}, Active: ptr(true)}
}

// exampleDelivery is the delivery of the examples.
func exampleDelivery() storage.WebhookDelivery {
	at := time.Date(2026, 1, 15, 9, 30, 1, 0, time.UTC)
	n, status := int64(1042), 200
	return storage.WebhookDelivery{ID: 311, WebhookID: 12, NotificationID: &n, MsgID: "msg_2b7f9c0e4d1a4f5e8a6b3c2d1e0f9a8b",
		Type: rules.Overspeed, State: "succeeded", Attempts: 1, NextAt: at, CreatedAt: at, LastStatus: &status,
		AttemptsLog: []storage.WebhookAttempt{{Time: at, Status: &status, DurationMS: 84}}}
}
