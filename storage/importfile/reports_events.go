package importfile

import (
	"context"
	"slices"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// importReports inserts the report definitions. A record whose account and
// name exist is skipped.
func (im *importer) importReports(ctx context.Context, f *importFile) error {
	for _, r := range f.Reports {
		rep, ref := r.val, r.ref
		if len(rep.ReportID) > 0 {
			return ref.errorf("report_id is assigned by the database")
		}
		acct, err := im.owner(ctx, ref, rep.Account)
		if err != nil {
			return err
		}
		if rep.Name == "" {
			return ref.errorf("name is required")
		}
		if err := im.checkDevices(ctx, ref, acct, rep.IMEI); err != nil {
			return err
		}
		if !slices.Contains(storage.SchedulePeriods(), rep.SchedulePeriod) {
			return ref.errorf(`schedule_period %q: want "", "d", "w" or "dw"`, rep.SchedulePeriod)
		}
		row := rep.Report
		row.AccountID = acct.ID
		if err := im.insertNamed(ctx, ref, &row, acct.ID, rep.Name, &im.res.Reports); err != nil {
			return err
		}
	}
	return nil
}

// importEvents inserts the event rules. A record whose account and name
// exist is skipped.
func (im *importer) importEvents(ctx context.Context, f *importFile) error {
	for _, r := range f.Events {
		ev, ref := r.val, r.ref
		if len(ev.EventID) > 0 {
			return ref.errorf("event_id is assigned by the database")
		}
		acct, err := im.owner(ctx, ref, ev.Account)
		if err != nil {
			return err
		}
		if ev.Name == "" {
			return ref.errorf("name is required")
		}
		if err := im.checkDevices(ctx, ref, acct, ev.IMEI); err != nil {
			return err
		}
		row := ev.Event
		row.AccountID = acct.ID
		if err := row.BeforeAppendModel(ctx, nil); err != nil { // apply the defaults before checking
			return ref.errorf("%v", err)
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
				return ref.errorf("%s %q: want one of %q", c.field, c.value, c.allowed)
			}
		}
		for _, d := range row.WeekDays {
			if !slices.Contains(storage.WeekDays(), d) {
				return ref.errorf("week_days: %q: want one of %q", d, storage.WeekDays())
			}
		}
		if err := im.insertNamed(ctx, ref, &row, acct.ID, ev.Name, &im.res.Events); err != nil {
			return err
		}
	}
	return nil
}

// checkDevices checks that every IMEI of a report or event rule is a
// device the account sees: its own, one of an account it manages, or any
// for an admin.
func (im *importer) checkDevices(ctx context.Context, ref recordRef, acct *storage.Account, imeis []string) error {
	for _, imei := range imeis {
		o, err := im.device(ctx, ref, imei)
		if err != nil {
			return err
		}
		if o.AccountID == acct.ID || acct.Type == tenancy.Admin {
			continue
		}
		owner, err := im.accountByID(ctx, o.AccountID)
		if err != nil {
			return ref.dbError(err)
		}
		if owner.ManagerID == nil || *owner.ManagerID != acct.ID {
			return ref.errorf("imei %q is not a device of account %q", imei, acct.Username)
		}
	}
	return nil
}

// insertNamed inserts a report or event rule unless the account already
// has one of that name, and counts what it did.
func (im *importer) insertNamed(ctx context.Context, ref recordRef, model any, accountID int64, name string, count *Count) error {
	found, err := im.exists(ctx, ref, model, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("?TableAlias.account_id = ? AND ?TableAlias.name = ?", accountID, name)
	})
	if err != nil {
		return err
	}
	if found {
		count.Skipped++
		return nil
	}
	if err := im.insert(ctx, ref, model); err != nil {
		return err
	}
	count.Inserted++
	return nil
}
