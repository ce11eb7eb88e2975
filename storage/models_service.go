package storage

import (
	"context"

	"github.com/uptrace/bun"
)

// Service is a row of services: a maintenance service record of one device
// (DESIGN §5). Kilometres for odo_*, hours for engh_*, days for days_*.
// Extra holds the record's extra properties, which the API merges into the
// item without overriding named fields.
type Service struct {
	bun.BaseModel `bun:"table:services,alias:s"`

	ServiceID           int64      `bun:"service_id,pk,autoincrement" json:"service_id"`
	AccountID           int64      `bun:"account_id,notnull" json:"-"`
	IMEI                string     `bun:"imei,notnull" json:"imei"`
	Name                string     `bun:"name,notnull" json:"name"`
	Odo                 bool       `bun:"odo,notnull" json:"odo"`
	OdoInterval         int        `bun:"odo_interval,notnull" json:"odo_interval"`
	OdoLast             int        `bun:"odo_last,notnull" json:"odo_last"`
	Engh                bool       `bun:"engh,notnull" json:"engh"`
	EnghInterval        int        `bun:"engh_interval,notnull" json:"engh_interval"`
	EnghLast            int        `bun:"engh_last,notnull" json:"engh_last"`
	Days                bool       `bun:"days,notnull" json:"days"`
	DaysInterval        int        `bun:"days_interval,notnull" json:"days_interval"`
	DaysLast            *Date      `bun:"days_last,type:date" json:"days_last"`
	OdoLeft             bool       `bun:"odo_left,notnull" json:"odo_left"`
	OdoLeftNum          int        `bun:"odo_left_num,notnull" json:"odo_left_num"`
	EnghLeft            bool       `bun:"engh_left,notnull" json:"engh_left"`
	EnghLeftNum         int        `bun:"engh_left_num,notnull" json:"engh_left_num"`
	DaysLeft            bool       `bun:"days_left,notnull" json:"days_left"`
	DaysLeftNum         int        `bun:"days_left_num,notnull" json:"days_left_num"`
	UpdateLast          bool       `bun:"update_last,notnull" json:"update_last"`
	NotifyServiceExpire bool       `bun:"notify_service_expire,notnull" json:"notify_service_expire"`
	Extra               JSONObject `bun:"extra,type:jsonb,notnull" json:"-"`
}

var _ bun.BeforeAppendModelHook = (*Service)(nil)

// BeforeAppendModel writes nil extra properties as the empty object.
func (s *Service) BeforeAppendModel(context.Context, bun.Query) error {
	if s.Extra == nil {
		s.Extra = JSONObject{}
	}
	return nil
}
