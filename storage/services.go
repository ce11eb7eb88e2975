package storage

import (
	"context"

	"github.com/uptrace/bun"
)

// Services is the services resource: GET /services (docs/api.md §7, docs/design.md §5) and /services/due.
var Services = declare[Service](counted)

// Service is a row of services: a maintenance service record of one device
// (docs/design.md §5). Kilometres for odo_*, hours for engh_*, days for days_*.
// Extra holds the record's extra properties, which the API merges into the
// item without overriding named fields.
type Service struct {
	bun.BaseModel `bun:"table:services,alias:s"`

	ServiceID           int64      `bun:"service_id,pk,autoincrement" json:"service_id"`
	AccountID           int64      `bun:"account_id,notnull" json:"-"`
	IMEI                string     `bun:"imei,notnull" json:"imei" list:"sort,filter,search=2"`
	Name                string     `bun:"name,notnull" json:"name" list:"sort,filter,search=1"`
	Odo                 bool       `bun:"odo,notnull" json:"odo" list:"sort,filter"`
	OdoInterval         int        `bun:"odo_interval,type:integer,notnull" json:"odo_interval" list:"sort,filter"`
	OdoLast             int        `bun:"odo_last,type:integer,notnull" json:"odo_last" list:"sort,filter"`
	Engh                bool       `bun:"engh,notnull" json:"engh" list:"sort,filter"`
	EnghInterval        int        `bun:"engh_interval,type:integer,notnull" json:"engh_interval" list:"sort,filter"`
	EnghLast            int        `bun:"engh_last,type:integer,notnull" json:"engh_last" list:"sort,filter"`
	Days                bool       `bun:"days,notnull" json:"days" list:"sort,filter"`
	DaysInterval        int        `bun:"days_interval,type:integer,notnull" json:"days_interval" list:"sort,filter"`
	DaysLast            *Date      `bun:"days_last,type:date" json:"days_last" list:"sort,filter"`
	OdoLeft             bool       `bun:"odo_left,notnull" json:"odo_left" list:"sort,filter"`
	OdoLeftNum          int        `bun:"odo_left_num,type:integer,notnull" json:"odo_left_num" list:"sort,filter"`
	EnghLeft            bool       `bun:"engh_left,notnull" json:"engh_left" list:"sort,filter"`
	EnghLeftNum         int        `bun:"engh_left_num,type:integer,notnull" json:"engh_left_num" list:"sort,filter"`
	DaysLeft            bool       `bun:"days_left,notnull" json:"days_left" list:"sort,filter"`
	DaysLeftNum         int        `bun:"days_left_num,type:integer,notnull" json:"days_left_num" list:"sort,filter"`
	UpdateLast          bool       `bun:"update_last,notnull" json:"update_last" list:"sort,filter"`
	NotifyServiceExpire bool       `bun:"notify_service_expire,notnull" json:"notify_service_expire" list:"sort,filter"`
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
