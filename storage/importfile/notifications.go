package importfile

import (
	"context"
	"errors"

	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/storage"
)

// The notifications apply last: they name the devices, event rules and
// service records before them.
var _ = declareSection(spec[importNotification]{name: "notifications", after: "passengers", key: []string{"account", "imei", "type"},
	load: loadNotification, dump: dumpNotifications})

// importNotification is a record of the notifications section: the
// model's fields, its account by username, its event rule (event) or its
// service record (service) by name within that account, or neither; the
// database assigns id, and account_id, object_id, event_id and service_id
// follow from the names.
type importNotification struct {
	storage.Notification
	Account   string       `json:"account"`
	Event     string       `json:"event,omitempty"`
	Service   string       `json:"service,omitempty"`
	AccountID derivedField `json:"account_id,omitzero"`
	ObjectID  derivedField `json:"object_id,omitzero"`
	EventID   derivedField `json:"event_id,omitzero"`
	ServiceID derivedField `json:"service_id,omitzero"`
	ID        dbAssigned   `json:"id,omitzero"`
}

// derivedField shadows a model's id that a record names by its natural
// key instead: a record that sets it is refused.
type derivedField struct{}

// UnmarshalJSON refuses the field.
func (derivedField) UnmarshalJSON([]byte) error {
	return errors.New("follows from the record's names (account, imei, event, service): leave it out")
}

// loadNotification inserts a notification of the record's account about
// one of its devices, naming at most one of its event rules and service
// records. A record whose account, imei, time and type exist is skipped
// (the section's key names a record in errors without its time: a key is
// text, and a time that does not parse is the record's error).
func loadNotification(ctx context.Context, im *importer, ref recordRef, n importNotification) (bool, error) {
	acct, err := im.owner(ctx, ref, n.Account)
	if err != nil {
		return false, err
	}
	o, err := im.device(ctx, ref, n.IMEI)
	if err != nil {
		return false, err
	}
	if o.AccountID != acct.ID {
		return false, ref.errorf("imei %q belongs to another account than %q", n.IMEI, n.Account)
	}
	if n.Type == "" {
		return false, ref.errorf("type is required")
	}
	if n.Time.IsZero() {
		return false, ref.errorf("time is required")
	}
	if n.Event != "" && n.Service != "" {
		return false, ref.errorf("names both an event rule and a service record: a notification is of one")
	}
	row := n.Notification
	row.AccountID, row.ObjectID, row.EventID, row.ServiceID = acct.ID, o.ID, nil, nil
	if n.Event != "" {
		id, err := im.namedID(ctx, ref, "event", "SELECT event_id FROM events WHERE account_id = ? AND name = ?", acct.ID, n.Event)
		if err != nil {
			return false, err
		}
		row.EventID = &id
	}
	if n.Service != "" {
		id, err := im.namedID(ctx, ref, "service", "SELECT service_id FROM services WHERE account_id = ? AND imei = ? AND name = ?", acct.ID, n.IMEI, n.Service)
		if err != nil {
			return false, err
		}
		row.ServiceID = &id
	}
	return im.insertNew(ctx, ref, &row, "n.account_id = ? AND n.imei = ? AND n.time = ? AND n.type = ?", acct.ID, n.IMEI, n.Time, n.Type)
}

// namedID returns the id the query selects for the record's name of what.
func (im *importer) namedID(ctx context.Context, ref recordRef, what, query string, args ...any) (int64, error) {
	var ids []int64
	if err := im.db.NewRaw(query, args...).Scan(ctx, &ids); err != nil {
		return 0, ref.dbError(err)
	}
	if len(ids) != 1 {
		return 0, ref.errorf("%s %q: no such %s of the account (for the device)", what, args[len(args)-1], what)
	}
	return ids[0], nil
}

// dumpNotifications writes the subtree's notifications, naming their rule
// or service record.
func dumpNotifications(ctx context.Context, ex *exporter, emit func(importNotification) error) error {
	names := map[string]map[int64]string{}
	for what, query := range map[string]string{
		"event":   "SELECT event_id AS id, name FROM events WHERE account_id = ANY(?)",
		"service": "SELECT service_id AS id, name FROM services WHERE account_id = ANY(?)",
	} {
		var rows []struct {
			ID   int64
			Name string
		}
		if err := ex.db.NewRaw(query, pgdialect.Array(ex.ids)).Scan(ctx, &rows); err != nil {
			return err
		}
		names[what] = map[int64]string{}
		for _, r := range rows {
			names[what][r.ID] = r.Name
		}
	}
	return eachRow(ctx, ex, "id", "n.account_id = ANY(?)", func(n *storage.Notification) int64 { return n.ID }, func(n *storage.Notification) error {
		rec := importNotification{Notification: *n, Account: ex.names[n.AccountID]}
		if n.EventID != nil {
			rec.Event = names["event"][*n.EventID]
		}
		if n.ServiceID != nil {
			rec.Service = names["service"][*n.ServiceID]
		}
		return emit(rec)
	})
}
