package storage

import (
	"context"
	"strconv"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage/audit"
	"github.com/fleetapi/fleetapi/storage/limits"
)

// eventWrites are the writes of event rules (docs/design.md §15): counted
// by the events quota; a change of a rule's type or checked_value clears
// the rule's state on every device of its account (resetRuleState).
var eventWrites = configWrites[Event]{
	model: Events, create: audit.ActionEventCreate, update: audit.ActionEventUpdate, remove: audit.ActionEventDelete,
	quota:     limits.QuotaEvents,
	id:        func(e *Event) *int64 { return &e.EventID },
	owner:     func(e *Event) *int64 { return &e.AccountID },
	devices:   func(e *Event) []string { return e.IMEI },
	zones:     func(e *Event) []string { return e.Zones },
	zoneField: "zones",
	audit:     eventAudit,
	after: func(ctx context.Context, tx *Store, old, new *Event, _ []int64) error {
		if old == nil || new == nil || (old.Type == new.Type && old.CheckedValue == new.CheckedValue) {
			return nil
		}
		return resetRuleState(ctx, tx, new.AccountID, new.EventID)
	},
}

// resetRuleState removes the state of the rule id from every device of
// account that holds one (docs/decisions.md "Writes of event rules"): the
// changed rule starts armed, as a new one does. The devices are locked
// FOR NO KEY UPDATE by id (step 3 of docs/locking.md), as the ingest locks
// them, after the account the write holds.
func resetRuleState(ctx context.Context, tx *Store, account, id int64) error {
	key := ruleStateKey(id)
	_, err := tx.db.NewRaw(`UPDATE objects SET rule_state = rule_state #- ARRAY['rules', ?]::text[]
WHERE id IN (SELECT id FROM objects WHERE account_id = ? AND rule_state #> ARRAY['rules', ?]::text[] IS NOT NULL
	ORDER BY id FOR NO KEY UPDATE)`, key, account, key).Exec(ctx)
	return err
}

// eventAudit is an event rule as the audit trail records it: its wire
// fields.
// ruleStateKey is the key of rule id in a device's rule state
// (rules.State.Rules: the id in decimal).
func ruleStateKey(id int64) string { return strconv.FormatInt(id, 10) }

func eventAudit(e Event) map[string]any {
	return map[string]any{
		"type": e.Type, "name": e.Name, "active": e.Active, "week_days": e.WeekDays.orEmpty(), "day_time": dayTimeOf(e.DayTime),
		"imei": e.IMEI.orEmpty(), "checked_value": e.CheckedValue, "route_trigger": e.RouteTrigger, "zone_trigger": e.ZoneTrigger,
		"routes": e.Routes.orEmpty(), "zones": e.Zones.orEmpty(), "notify_system": e.NotifySystem, "notify_email": e.NotifyEmail,
		"notify_email_address": e.NotifyEmailAddress, "notify_sms": e.NotifySMS, "notify_sms_number": e.NotifySMSNumber,
		"notify_telegram": e.NotifyTelegram, "email_template_id": e.EmailTemplateID, "sms_template_id": e.SMSTemplateID,
		"cmd_send": e.CmdSend, "cmd_gateway": e.CmdGateway, "cmd_type": e.CmdType, "cmd_string": e.CmdString,
	}
}

func dayTimeOf(o JSONObject) JSONObject {
	if o == nil {
		return JSONObject{}
	}
	return o
}

// CreateEvent stores the event rule e for its account e.AccountID (event.create,
// docs/design.md §15) with its audit row, in one transaction, under the
// Idempotency-Key idem (nil: none). The account must be in mscope, the
// caller's management scope, and the new rule in scope, its events scope;
// e's devices must be the account's. Errors: ErrNotFound (the account
// outside mscope or erased), ErrInvalid (an InvalidFields "imei" naming
// a device that is not the account's; a value the database refuses),
// ErrConflict (a rule of the same name in the account), a
// *limits.QuotaError, ErrIdempotencyKeyReused, ErrUnavailable.
func (s *Store) CreateEvent(ctx context.Context, scope, mscope policy.Scope, actor Actor, e Event, idem *IdempotentRequest) (Event, bool, error) {
	return eventWrites.createRow(ctx, s, scope, mscope, actor, e, idem)
}

// UpdateEvent changes the event rule id in scope (ErrNotFound outside it,
// like a missing id): apply receives the rule as stored, under its
// account's lock, and returns the rule to store (its error ends the
// write, nothing written). event.update is audited with the fields that
// changed. Errors: those of CreateEvent and apply's.
func (s *Store) UpdateEvent(ctx context.Context, scope, mscope policy.Scope, actor Actor, id int64, apply func(cur Event) (Event, error)) (Event, error) {
	return eventWrites.changeRow(ctx, s, scope, mscope, actor, id, audit.ActionEventUpdate,
		func(_ context.Context, _ *Store, cur Event) (Event, error) { return apply(cur) })
}

// DeleteEvent deletes the event rule id in scope (ErrNotFound outside it,
// like a missing id) with its event.delete audit row. The rule stops
// firing with the next reading evaluated, on every replica: rules are
// read from the database for every batch (loadEvaluation).
func (s *Store) DeleteEvent(ctx context.Context, scope, mscope policy.Scope, actor Actor, id int64) error {
	return eventWrites.deleteRow(ctx, s, scope, mscope, actor, id)
}
