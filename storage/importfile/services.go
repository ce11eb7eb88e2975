package importfile

import (
	"context"

	"github.com/fleetapi/fleetapi/storage"
)

// The service records apply after the tokens.
var _ = declareSection(spec[importService]{name: "services", after: "tokens", key: []string{"imei", "name"}, load: loadService, dump: dumpServices})

// importService is a record of the services section: every field of the
// model, its account by username; the database assigns service_id.
type importService struct {
	storage.Service
	Account   string             `json:"account"`
	Extra     storage.JSONObject `json:"extra"`
	ServiceID dbAssigned         `json:"service_id,omitzero"`
}

// loadService inserts a service record; its device must belong to the
// record's account. A record whose imei and name exist is skipped.
func loadService(ctx context.Context, im *importer, ref recordRef, s importService) (bool, error) {
	acct, err := im.owner(ctx, ref, s.Account)
	if err != nil {
		return false, err
	}
	o, err := im.device(ctx, ref, s.IMEI)
	if err != nil {
		return false, err
	}
	if o.AccountID != acct.ID {
		return false, ref.errorf("imei %q belongs to another account than %q", s.IMEI, s.Account)
	}
	if s.Name == "" {
		return false, ref.errorf("name is required")
	}
	row := s.Service
	row.AccountID = acct.ID
	row.Extra = s.Extra
	return im.insertNew(ctx, ref, &row, "s.imei = ? AND s.name = ?", s.IMEI, s.Name)
}

// dumpServices writes the subtree's service records.
func dumpServices(ctx context.Context, ex *exporter, emit func(importService) error) error {
	return eachRow(ctx, ex, "service_id", "s.account_id = ANY(?)", func(s *storage.Service) int64 { return s.ServiceID }, func(s *storage.Service) error {
		return emit(importService{Service: *s, Account: ex.names[s.AccountID], Extra: s.Extra})
	})
}
