package storage

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

// Report is a row of reports: a report definition naming a list of devices
// (DESIGN §5). Its lists encode as [] when empty.
type Report struct {
	bun.BaseModel `bun:"table:reports,alias:r"`

	ReportID             int64      `bun:"report_id,pk,autoincrement" json:"report_id"`
	AccountID            int64      `bun:"account_id,notnull" json:"-"`
	Name                 string     `bun:"name,notnull" json:"name"`
	Type                 string     `bun:"type,notnull" json:"type"`
	Format               string     `bun:"format,notnull" json:"format"`
	ShowAddresses        bool       `bun:"show_addresses,notnull" json:"show_addresses"`
	ZonesAddresses       bool       `bun:"zones_addresses,notnull" json:"zones_addresses"`
	ShowTripImage        bool       `bun:"show_trip_image,notnull" json:"show_trip_image"`
	StopDuration         int        `bun:"stop_duration,notnull" json:"stop_duration"`
	SpeedLimit           int        `bun:"speed_limit,notnull" json:"speed_limit"`
	IMEI                 StringList `bun:"imei,array,notnull" json:"imei"`
	ZoneIDs              StringList `bun:"zone_ids,array,notnull" json:"zone_ids"`
	SensorNames          StringList `bun:"sensor_names,array,notnull" json:"sensor_names"`
	DataItems            StringList `bun:"data_items,array,notnull" json:"data_items"`
	SchedulePeriod       string     `bun:"schedule_period,notnull" json:"schedule_period"`
	ScheduleEmailAddress string     `bun:"schedule_email_address,notnull" json:"schedule_email_address"`
	DtScheduleD          *time.Time `bun:"dt_schedule_d" json:"dt_schedule_d"`
	DtScheduleW          *time.Time `bun:"dt_schedule_w" json:"dt_schedule_w"`
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
