package storage

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

// Reports is the reports resource: GET /reports (docs/api.md §7, docs/design.md §5).
var Reports = declare[Report](counted)

// Report is a row of reports: a report definition naming a list of devices
// (docs/design.md §5). Its lists encode as [] when empty.
type Report struct {
	bun.BaseModel `bun:"table:reports,alias:r"`

	ReportID             int64      `bun:"report_id,pk,autoincrement" json:"report_id"`
	AccountID            int64      `bun:"account_id,notnull" json:"-"`
	Name                 string     `bun:"name,notnull" json:"name" list:"sort,filter,search=1"`
	Type                 string     `bun:"type,notnull" json:"type" list:"sort,filter,search=2"`
	Format               string     `bun:"format,notnull" json:"format" list:"sort,filter"`
	ShowAddresses        bool       `bun:"show_addresses,notnull" json:"show_addresses" list:"sort,filter"`
	ZonesAddresses       bool       `bun:"zones_addresses,notnull" json:"zones_addresses" list:"sort,filter"`
	ShowTripImage        bool       `bun:"show_trip_image,notnull" json:"show_trip_image" list:"sort,filter"`
	StopDuration         int        `bun:"stop_duration,type:integer,notnull" json:"stop_duration" list:"sort,filter"`
	SpeedLimit           int        `bun:"speed_limit,type:integer,notnull" json:"speed_limit" list:"sort,filter"`
	IMEI                 StringList `bun:"imei,array,notnull" json:"imei" list:"sort,filter"`
	ZoneIDs              StringList `bun:"zone_ids,array,notnull" json:"zone_ids" list:"sort,filter"`
	SensorNames          StringList `bun:"sensor_names,array,notnull" json:"sensor_names" list:"sort,filter"`
	DataItems            StringList `bun:"data_items,array,notnull" json:"data_items" list:"sort,filter"`
	SchedulePeriod       string     `bun:"schedule_period,notnull" json:"schedule_period" list:"sort,filter"`
	ScheduleEmailAddress string     `bun:"schedule_email_address,notnull" json:"schedule_email_address" list:"sort,filter"`
	DtScheduleD          *time.Time `bun:"dt_schedule_d" json:"dt_schedule_d" list:"sort,filter"`
	DtScheduleW          *time.Time `bun:"dt_schedule_w" json:"dt_schedule_w" list:"sort,filter"`
}

var _ bun.BeforeAppendModelHook = (*Report)(nil)

// BeforeAppendModel writes nil lists as empty arrays.
func (r *Report) BeforeAppendModel(context.Context, bun.Query) error {
	r.IMEI = r.IMEI.orEmpty()
	r.ZoneIDs = r.ZoneIDs.orEmpty()
	r.SensorNames = r.SensorNames.orEmpty()
	r.DataItems = r.DataItems.orEmpty()
	return nil
}

// SchedulePeriods are the allowed values of Report.SchedulePeriod.
func SchedulePeriods() []string { return []string{"", "d", "w", "dw"} }
