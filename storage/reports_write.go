package storage

import (
	"context"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage/audit"
)

// reportWrites are the writes of reports (docs/design.md §15).
var reportWrites = configWrites[Report]{
	model: Reports, create: audit.ActionReportCreate, update: audit.ActionReportUpdate, remove: audit.ActionReportDelete,
	id:        func(r *Report) *int64 { return &r.ReportID },
	owner:     func(r *Report) *int64 { return &r.AccountID },
	devices:   func(r *Report) []string { return r.IMEI },
	zones:     func(r *Report) []string { return r.ZoneIDs },
	zoneField: "zone_ids",
	audit:     reportAudit,
}

// reportAudit is a report as the audit trail records it: its wire fields.
func reportAudit(r Report) map[string]any {
	return map[string]any{
		"name": r.Name, "type": r.Type, "format": r.Format, "show_addresses": r.ShowAddresses, "zones_addresses": r.ZonesAddresses,
		"show_trip_image": r.ShowTripImage, "stop_duration": r.StopDuration, "speed_limit": r.SpeedLimit, "imei": r.IMEI.orEmpty(),
		"zone_ids": r.ZoneIDs.orEmpty(), "sensor_names": r.SensorNames.orEmpty(), "data_items": r.DataItems.orEmpty(),
		"schedule_period": r.SchedulePeriod, "schedule_email_address": r.ScheduleEmailAddress,
		"dt_schedule_d": r.DtScheduleD, "dt_schedule_w": r.DtScheduleW,
	}
}

// CreateReport stores the report r for its account r.AccountID
// (report.create, docs/design.md §15) like CreateEvent, without a quota.
func (s *Store) CreateReport(ctx context.Context, scope, mscope policy.Scope, actor Actor, r Report, idem *IdempotentRequest) (Report, bool, error) {
	return reportWrites.createRow(ctx, s, scope, mscope, actor, r, idem)
}

// UpdateReport changes the report id in scope like UpdateEvent
// (report.update).
func (s *Store) UpdateReport(ctx context.Context, scope, mscope policy.Scope, actor Actor, id int64, apply func(cur Report) (Report, error)) (Report, error) {
	return reportWrites.changeRow(ctx, s, scope, mscope, actor, id, audit.ActionReportUpdate,
		func(_ context.Context, _ *Store, cur Report) (Report, error) { return apply(cur) })
}

// DeleteReport deletes the report id in scope like DeleteEvent
// (report.delete).
func (s *Store) DeleteReport(ctx context.Context, scope, mscope policy.Scope, actor Actor, id int64) error {
	return reportWrites.deleteRow(ctx, s, scope, mscope, actor, id)
}
