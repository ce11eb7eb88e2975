package importfile

import (
	"context"
	"slices"

	"github.com/fleetapi/fleetapi/storage"
)

// The report definitions apply after the service records.
var _ = declareSection(spec[importReport]{name: "reports", after: "services", key: []string{"account", "name"}, load: loadReport})

// importReport is a record of the reports section: every field of the
// model, its account by username; the database assigns report_id.
type importReport struct {
	storage.Report
	Account  string     `json:"account"`
	ReportID dbAssigned `json:"report_id"`
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
