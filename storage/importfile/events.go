package importfile

import (
	"context"
	"slices"

	"github.com/fleetapi/fleetapi/storage"
)

// The event rules apply after the report definitions.
var _ = declareSection(spec[importEvent]{name: "events", after: "reports", key: []string{"account", "name"}, load: loadEvent, dump: dumpEvents})

// importEvent is a record of the events section: every field of the
// model, its account by username; the database assigns event_id.
type importEvent struct {
	storage.Event
	Account string     `json:"account"`
	EventID dbAssigned `json:"event_id,omitzero"`
}

// loadEvent inserts an event rule, with the model's defaults. A record
// whose account and name exist is skipped.
func loadEvent(ctx context.Context, im *importer, ref recordRef, ev importEvent) (bool, error) {
	acct, err := im.namedOwner(ctx, ref, ev.Account, ev.Name, ev.IMEI)
	if err != nil {
		return false, err
	}
	row := ev.Event
	row.AccountID = acct.ID
	if err := row.BeforeAppendModel(ctx, nil); err != nil { // apply the defaults before checking
		return false, ref.errorf("%v", err)
	}
	for _, c := range []struct {
		field, value string
		allowed      []string
	}{
		{"route_trigger", row.RouteTrigger, storage.Triggers()},
		{"zone_trigger", row.ZoneTrigger, storage.Triggers()},
		{"cmd_gateway", row.CmdGateway, storage.CmdGateways()},
		{"cmd_type", row.CmdType, storage.CmdTypes()},
	} {
		if !slices.Contains(c.allowed, c.value) {
			return false, ref.errorf("%s %q: want one of %q", c.field, c.value, c.allowed)
		}
	}
	for _, d := range row.WeekDays {
		if !slices.Contains(storage.WeekDays(), d) {
			return false, ref.errorf("week_days: %q: want one of %q", d, storage.WeekDays())
		}
	}
	return im.insertNew(ctx, ref, &row, byAccountAndName, acct.ID, ev.Name)
}

// dumpEvents writes the subtree's event rules, a zone rule's zones by
// name (zoneNamesOf).
func dumpEvents(ctx context.Context, ex *exporter, emit func(importEvent) error) error {
	return eachRow(ctx, ex, "event_id", "e.account_id = ANY(?)", func(e *storage.Event) int64 { return e.EventID }, func(e *storage.Event) error {
		// a zone rule names its zones by name in a file (zones.go)
		zones, err := zoneNamesOf(ctx, ex, e)
		if err != nil {
			return err
		}
		e.Zones = zones
		return emit(importEvent{Event: *e, Account: ex.names[e.AccountID]})
	})
}
