package importfile

import (
	"context"
	"slices"

	"github.com/fleetapi/fleetapi/storage"
)

// The report definitions apply after the service records.
var _ = declareSection(spec[importReport]{name: "reports", after: "services", key: []string{"account", "name"}, load: loadReport, dump: dumpReports})

// importReport is a record of the reports section: every field of the
// model, its account by username; the database assigns report_id.
type importReport struct {
	storage.Report
	Account  string     `json:"account"`
	ReportID dbAssigned `json:"report_id,omitzero"`
}

// loadReport inserts a report definition. A record whose account and name
// exist is skipped.
func loadReport(ctx context.Context, im *importer, ref recordRef, rep importReport) (bool, error) {
	acct, err := im.namedOwner(ctx, ref, rep.Account, rep.Name, rep.IMEI)
	if err != nil {
		return false, err
	}
	if !slices.Contains(storage.SchedulePeriods(), rep.SchedulePeriod) {
		return false, ref.errorf(`schedule_period %q: want "", "d", "w" or "dw"`, rep.SchedulePeriod)
	}
	row := rep.Report
	row.AccountID = acct.ID
	return im.insertNew(ctx, ref, &row, byAccountAndName, acct.ID, rep.Name)
}

// dumpReports writes the subtree's report definitions.
func dumpReports(ctx context.Context, ex *exporter, emit func(importReport) error) error {
	return eachRow(ctx, ex, "report_id", "r.account_id = ANY(?)", func(r *storage.Report) int64 { return r.ReportID }, func(r *storage.Report) error {
		return emit(importReport{Report: *r, Account: ex.names[r.AccountID]})
	})
}
