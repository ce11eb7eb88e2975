package api

import (
	"encoding/json"

	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/storage"
)

// maxDue is the most due records GET /services/due returns (spec §4.5).
const maxDue = 500

// getServicesDue answers GET /services/due: the caller's due maintenance
// records, newest service first, at most 500, computed for today (UTC).
func (s *Server) getServicesDue(c fuego.ContextNoBody) (*Envelope[[]DueService], error) {
	if err := noParams(c.Request().URL.RawQuery); err != nil {
		return nil, err
	}
	ctx := c.Context()
	scope, err := s.scopeFor(ctx, storage.Services.Resource())
	if err != nil {
		return nil, err
	}
	rows, err := s.cfg.Store.DueServices(ctx, scope, s.cfg.Now().UTC(), maxDue)
	if err != nil {
		return nil, err
	}
	return &Envelope[[]DueService]{Data: dueServices(rows)}, nil
}

// DueService is the wire form of a due maintenance record (DESIGN §5): the
// service record, extra properties included, plus the due fields.
type DueService struct {
	storage.DueService
}

// MarshalJSON encodes the named and due fields and merges the extra
// properties.
func (d DueService) MarshalJSON() ([]byte, error) {
	named, err := json.Marshal(d.wire())
	if err != nil {
		return nil, err
	}
	return mergeExtra(named, d.Extra)
}

func dueServices(rows []storage.DueService) []DueService {
	out := make([]DueService, len(rows))
	for i, r := range rows {
		out[i] = DueService{r}
	}
	return out
}

// dueServiceJSON is the wire form of a due record: every field of the
// service record spelled out, so that no later change to the embedding can
// hide one, then the due fields.
type dueServiceJSON struct {
	ServiceID           int64              `json:"service_id"`
	IMEI                string             `json:"imei"`
	Name                string             `json:"name"`
	Odo                 bool               `json:"odo"`
	OdoInterval         int                `json:"odo_interval"`
	OdoLast             int                `json:"odo_last"`
	Engh                bool               `json:"engh"`
	EnghInterval        int                `json:"engh_interval"`
	EnghLast            int                `json:"engh_last"`
	Days                bool               `json:"days"`
	DaysInterval        int                `json:"days_interval"`
	DaysLast            *storage.Date      `json:"days_last"`
	OdoLeft             bool               `json:"odo_left"`
	OdoLeftNum          int                `json:"odo_left_num"`
	EnghLeft            bool               `json:"engh_left"`
	EnghLeftNum         int                `json:"engh_left_num"`
	DaysLeft            bool               `json:"days_left"`
	DaysLeftNum         int                `json:"days_left_num"`
	UpdateLast          bool               `json:"update_last"`
	NotifyServiceExpire bool               `json:"notify_service_expire"`
	ObjectName          string             `json:"object_name"`
	OdoRemaining        *int64             `json:"odo_remaining"`
	EnghRemaining       *int64             `json:"engh_remaining"`
	DaysRemaining       *int64             `json:"days_remaining"`
	Due                 storage.StringList `json:"due"`
	State               string             `json:"state"`
}

// wire returns the named and due fields of d; Due is [] when empty.
func (d DueService) wire() dueServiceJSON {
	s := d.Service
	due := d.Due
	if due == nil {
		due = storage.StringList{}
	}
	return dueServiceJSON{
		ServiceID: s.ServiceID, IMEI: s.IMEI, Name: s.Name,
		Odo: s.Odo, OdoInterval: s.OdoInterval, OdoLast: s.OdoLast,
		Engh: s.Engh, EnghInterval: s.EnghInterval, EnghLast: s.EnghLast,
		Days: s.Days, DaysInterval: s.DaysInterval, DaysLast: s.DaysLast,
		OdoLeft: s.OdoLeft, OdoLeftNum: s.OdoLeftNum,
		EnghLeft: s.EnghLeft, EnghLeftNum: s.EnghLeftNum,
		DaysLeft: s.DaysLeft, DaysLeftNum: s.DaysLeftNum,
		UpdateLast: s.UpdateLast, NotifyServiceExpire: s.NotifyServiceExpire,
		ObjectName: d.ObjectName, OdoRemaining: d.OdoRemaining, EnghRemaining: d.EnghRemaining,
		DaysRemaining: d.DaysRemaining, Due: due, State: d.State,
	}
}
