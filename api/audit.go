package api

import (
	"math"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/audit"
)

// registerAuditEvents declares GET /audit-events (docs/design.md §9).
func (s *Server) registerAuditEvents(g *fuego.Server) {
	q := openapi3.ParameterInQuery
	managedListRoute(g, s, "/audit-events", storage.AuditEvents, newestFirst, []fuego.RouteOption{
		fuego.OptionOperationID("get_audit_events"), fuego.OptionTags("Account"),
		fuego.OptionSummary("Paged audit trail of management changes"),
		fuego.OptionDescription("The management writes whose target account is in the caller's management scope, newest first by default " +
			"(sort at, order desc). Never holds a secret or a hash. Needs the token permission GET /audit-events."),
		paramSchema(q, paramSort, func(s *openapi3.Schema) { s.Default = "at" }),
		paramSchema(q, paramOrder, func(s *openapi3.Schema) { s.Default = "desc" }),
		// The default order's cursor: at, newest first, from the last instant.
		paramExample(q, paramAfter, exampleCursor(storage.AuditEvents.Descriptor, "/audit-events", storage.Cursor{Sort: auditAt(), Desc: true,
			Value: time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC), ID: math.MaxInt64})),
		paramSchema(q, "action", func(s *openapi3.Schema) { s.WithEnum(anys(auditActions)...) }),
		respondsPage(auditEventSchema(), []audit.Event{exampleAuditEvent()}),
	})
}

// auditActions are the actions of the audit trail.
var auditActions = []string{policy.ActionAccountCreate, policy.ActionAccountUpdate, policy.ActionAccountErase, policy.ActionGrantsReplace,
	policy.ActionObjectCreate, policy.ActionObjectMove, policy.ActionTokenCreate, policy.ActionTokenRevoke,
	policy.ActionWebhookCreate, policy.ActionWebhookUpdate, policy.ActionWebhookDelete, policy.ActionWebhookRotate,
	policy.ActionWebhookTest, policy.ActionWebhookRetry,
	policy.ActionZoneCreate, policy.ActionZoneUpdate, policy.ActionZoneDelete,
	audit.ActionEventCreate, audit.ActionEventUpdate, audit.ActionEventDelete,
	audit.ActionServiceCreate, audit.ActionServiceUpdate, audit.ActionServiceDelete, audit.ActionServiceDone,
	audit.ActionReportCreate, audit.ActionReportUpdate, audit.ActionReportDelete}

// newestFirst completes a request of GET /audit-events: newest first
// unless the query names a sort (and, with no order, descending by at); an
// action filter names an audit action.
func newestFirst(raw string, req *storage.ListRequest) error {
	q, _ := parseQuery(raw) // parseListRequest has parsed it without error
	if _, ok := q[paramSort]; !ok {
		req.Sort, _ = storage.AuditEvents.Field("at")
		if _, ok := q[paramOrder]; !ok {
			req.Desc = true
		}
	}
	return enumFilter(*req, "action", auditActions, "must be one of the audit actions")
}

// auditEventSchema is the AuditEvent component.
func auditEventSchema() wireType {
	return wireType{name: "AuditEvent", value: audit.Event{}, description: "One management write (docs/design.md §9).",
		fields: map[string][]fieldOpt{
			"id":                {desc("Id of the event."), minimum(1)},
			"at":                {desc("When the write's transaction ran.")},
			"actor_account_id":  {minimum(0), desc("The account that made the write; 0: the operator through the command line (fleetapi tenant erase).")},
			"actor_token_id":    {minimum(0), desc("The token it used; 0: the operator through the command line.")},
			"action":            {enum(auditActions...), desc("What was done.")},
			"target_account_id": {minimum(1), desc("The account changed, or the owner of the token or object; for account.erase the erased account's manager (the account itself at the top).")},
			"target_id":         {minimum(1), desc("The account, token or object acted on (account.erase: the erased account).")},
			"changes":           {freeObject(), desc(`Exactly the fields that changed: {"field": {"before": x, "after": y}}, before null on a create. Never a secret or a hash.`)},
			"request_id":        {desc("The request's X-Request-Id.")},
			"trace_id":          {desc("The request's trace id, or empty.")},
		}}
}

func exampleAuditEvent() audit.Event {
	return audit.Event{ID: 3, At: time.Date(2026, 1, 15, 9, 30, 0, 0, time.UTC), ActorAccountID: 4, ActorTokenID: 3,
		Action: policy.ActionAccountUpdate, TargetAccountID: 14, TargetID: 14,
		Changes:   audit.Changes{"active": {Before: true, After: false}},
		RequestID: "0f8b4c2e9d7a4b1c", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"}
}

// auditAt is the field at of the audit events.
func auditAt() storage.Field {
	f, _ := storage.AuditEvents.Field("at")
	return f
}
