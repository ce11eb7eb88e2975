package api

import (
	"net/http"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/storage"
)

// registerReportWrites declares POST /reports, PATCH and DELETE
// /reports/{id} (docs/design.md §15).
func (s *Server) registerReportWrites(g *fuego.Server) {
	who := " Subaccounts write no reports. Needs the token permission "
	fuego.Post(g, "/reports", func(c fuego.ContextWithBody[ReportInput]) (*Envelope[storage.Report], error) {
		row, replayed, err := reportResource.create(s, c.Request(), c.Context(), s.cfg.Store.CreateReport)
		if err != nil {
			return nil, err
		}
		return createdEnvelope(c, row, replayed), nil
	}, routeOptions(writeErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("create_report"), fuego.OptionTags("Reports"),
		fuego.OptionSummary("Create a report definition"),
		fuego.OptionDescription("Creates a report definition for account_id (default: the caller's own account), an account in the caller's " +
			"management scope (404 outside) that is not a subaccount. Every device of imei must be that account's (400 VALIDATION_FAILED " +
			"otherwise, the same answer for an unknown IMEI and another tenant's). A name is unique in the account (409). Audited " +
			"(report.create)." + who + "POST /reports and write access."),
		idempotentCreate(idempotencyKeyHeader),
		takesBody(reportInputSchema(true), exampleReportInput()),
		respondsOne(reportSchema(), exampleReport()),
	})...)
	fuego.Patch(g, "/reports/{id}", func(c fuego.ContextWithBody[ReportFields]) (*Envelope[storage.Report], error) {
		row, err := reportResource.change(s, c, c.Context(), s.cfg.Store.UpdateReport)
		if err != nil {
			return nil, err
		}
		return &Envelope[storage.Report]{Data: row}, nil
	}, routeOptions(changeErrors(), errorResponses(http.StatusConflict), []fuego.RouteOption{
		fuego.OptionOperationID("update_report"), fuego.OptionTags("Reports"),
		fuego.OptionSummary("Change a report definition"),
		fuego.OptionDescription("Changes the fields named in the body of a report in the caller's scope (404 outside, like a missing id); " +
			"the report is then validated whole, as a create's body. Audited (report.update)." + who + "PATCH /reports/{id} and write access."),
		takesBody(reportInputSchema(false), ReportFields{SchedulePeriod: "w"}),
		respondsOne(reportSchema(), exampleReport()),
	}, pathID("id", "Report id.", exampleReport().ReportID))...)
	fuego.Delete(g, "/reports/{id}", func(c fuego.ContextNoBody) (any, error) {
		return reportResource.remove(s, c, s.cfg.Store.DeleteReport)
	}, routeOptions(oneErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("delete_report"), fuego.OptionTags("Reports"),
		fuego.OptionSummary("Delete a report definition"),
		fuego.OptionDescription("Deletes a report in the caller's scope (404 outside, like a missing id). Audited (report.delete)." +
			who + "DELETE /reports/{id} and write access."),
		fuego.OptionDefaultStatusCode(http.StatusNoContent), respondsNoContent(),
	}, pathID("id", "Report id.", exampleReport().ReportID))...)
}

// ReportFields are the fields of a report a client writes: the body of
// PATCH /reports/{id} (the fields present replace the report's) and, with
// account_id, of POST /reports (absent fields take their defaults).
type ReportFields struct {
	Name                 string   `json:"name,omitempty"`
	Type                 string   `json:"type,omitempty"`
	Format               string   `json:"format,omitempty"`
	ShowAddresses        bool     `json:"show_addresses,omitempty"`
	ZonesAddresses       bool     `json:"zones_addresses,omitempty"`
	ShowTripImage        bool     `json:"show_trip_image,omitempty"`
	StopDuration         int64    `json:"stop_duration,omitempty"`
	SpeedLimit           int64    `json:"speed_limit,omitempty"`
	IMEI                 []string `json:"imei,omitempty"`
	ZoneIDs              []string `json:"zone_ids,omitempty"`
	SensorNames          []string `json:"sensor_names,omitempty"`
	DataItems            []string `json:"data_items,omitempty"`
	SchedulePeriod       string   `json:"schedule_period,omitempty"`
	ScheduleEmailAddress string   `json:"schedule_email_address,omitempty"`
	DtScheduleD          *string  `json:"dt_schedule_d,omitempty"`
	DtScheduleW          *string  `json:"dt_schedule_w,omitempty"`
}

// ReportInput is the body of POST /reports.
type ReportInput struct {
	// AccountID is the report's account; absent: the caller's own.
	AccountID *int64 `json:"account_id,omitempty"`
	ReportFields
}

// Bounds of a report's fields.
const (
	maxReportType   = 50
	maxReportFormat = 20
)

// reportResource declares the writes of reports.
var reportResource = configResource[storage.Report, ReportInput, ReportFields]{
	what: "report", route: "POST /reports", resource: storage.Reports.Resource(),
	validate: func(in ReportInput, faults textFaults) (configRequest[storage.Report], error) {
		v := fieldCheck{}
		v.account(in.AccountID)
		row := reportOf(v, in.ReportFields)
		return configRequest[storage.Report]{Row: row, Account: in.AccountID}, v.done("report", faults)
	},
	patch: func(in ReportFields, faults textFaults) (storage.Report, error) {
		v := fieldCheck{}
		row := reportOf(v, in)
		return row, v.done("report", faults)
	},
	owner:    func(r *storage.Report, account int64) { r.AccountID = account },
	conflict: "a report with this name already exists in the account",
}

// reportOf validates a report's fields into v and returns the row.
func reportOf(v fieldCheck, in ReportFields) storage.Report {
	r := storage.Report{
		Name: v.name("name", in.Name), Type: in.Type, Format: in.Format,
		ShowAddresses: in.ShowAddresses, ZonesAddresses: in.ZonesAddresses, ShowTripImage: in.ShowTripImage,
		StopDuration: v.count("stop_duration", in.StopDuration), SpeedLimit: v.count("speed_limit", in.SpeedLimit),
		SchedulePeriod: in.SchedulePeriod, ScheduleEmailAddress: in.ScheduleEmailAddress,
	}
	v.text("type", r.Type, maxReportType)
	v.text("format", r.Format, maxReportFormat)
	r.IMEI = v.list("imei", in.IMEI, maxDevicesNamed, 0, imeiPattern, "an IMEI: 1 to 50 letters, digits or '-'")
	r.ZoneIDs = v.list("zone_ids", in.ZoneIDs, maxListItems, 0, zoneIDPattern, "a zone id: 1 to 50 letters, digits, '_' or '-'")
	r.SensorNames = v.list("sensor_names", in.SensorNames, maxListItems, maxItemLen, nil, "1 to 100 characters")
	r.DataItems = v.list("data_items", in.DataItems, maxListItems, maxItemLen, nil, "1 to 100 characters")
	v.oneOf("schedule_period", r.SchedulePeriod, storage.SchedulePeriods())
	v.emails("schedule_email_address", r.ScheduleEmailAddress)
	r.DtScheduleD = v.timestamp("dt_schedule_d", in.DtScheduleD)
	r.DtScheduleW = v.timestamp("dt_schedule_w", in.DtScheduleW)
	return r
}

// timestamp checks an RFC 3339 time or null, years 1 to 9999 in UTC.
func (v fieldCheck) timestamp(field string, p *string) *time.Time {
	if p == nil {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, *p)
	if err != nil || t.UTC().Year() < 1 || t.UTC().Year() > 9999 {
		v[field] = "an RFC 3339 time (years 1 to 9999 in UTC), or null"
		return nil
	}
	t = t.UTC().Truncate(time.Microsecond)
	return &t
}

// reportInputSchema is the ReportInput component (create), or ReportPatch
// (change).
func reportInputSchema(create bool) wireType {
	fields := reportSchema().fields
	delete(fields, "report_id")
	fields["name"] = []fieldOpt{minLen(1), maxLen(maxNameLen), desc("Name of the report, unique in the account (409 otherwise); required on a create.")}
	fields["type"] = append(fields["type"], maxLen(maxReportType))
	fields["format"] = append(fields["format"], maxLen(maxReportFormat))
	fields["stop_duration"] = append(fields["stop_duration"], minimum(0), maximum(maxInteger))
	fields["speed_limit"] = append(fields["speed_limit"], minimum(0), maximum(maxInteger))
	fields["imei"] = []fieldOpt{maxItems(maxDevicesNamed), uniqueItems(), itemPattern(imeiPattern.String()), itemLen(1, 50), desc("IMEIs of the account's devices the report covers, each once.")}
	for _, f := range []string{"zone_ids", "sensor_names", "data_items"} {
		fields[f] = append(fields[f], maxItems(maxListItems), uniqueItems())
	}
	fields["zone_ids"] = append(fields["zone_ids"], itemPattern(zoneIDPattern.String()), itemLen(1, 50),
		desc("Ids of zones of the report's account (GET /zones) the report covers; an id that is not a zone of the account (absent, deleted, another account's) is a 400 VALIDATION_FAILED naming zone_ids."))
	fields["sensor_names"] = append(fields["sensor_names"], itemLen(1, maxItemLen))
	fields["data_items"] = append(fields["data_items"], itemLen(1, maxItemLen))
	fields["schedule_email_address"] = append(fields["schedule_email_address"], maxLen(maxTextLen))
	for _, f := range []string{"dt_schedule_d", "dt_schedule_w"} {
		fields[f] = append(fields[f], typed(openapi3.TypeString), nullable(), format("date-time"))
	}
	if !create {
		return wireType{name: "ReportPatch", required: []string{}, minProperties: 1, value: ReportFields{}, fields: fields,
			description: "The fields of a report to change (docs/design.md §15); at least one. Field names are exact; unknown, repeated and null keys are rejected (the schedule times take null)."}
	}
	fields["account_id"] = []fieldOpt{minimum(1), desc("The report's account, in the caller's management scope and not a subaccount; defaults to the caller's own.")}
	return wireType{name: "ReportInput", value: ReportInput{}, fields: fields, required: []string{"name"},
		description: "A report definition to create (docs/design.md §15). Absent fields take their defaults. Field names are exact; unknown, repeated and null keys are rejected (the schedule times take null)."}
}

func exampleReportInput() ReportInput {
	r := exampleReport()
	d := r.DtScheduleD.Format(time.RFC3339)
	return ReportInput{ReportFields: ReportFields{Name: r.Name, Type: r.Type, Format: r.Format, ShowAddresses: true, StopDuration: 5, SpeedLimit: 90,
		IMEI: r.IMEI, DataItems: r.DataItems, SchedulePeriod: "d", ScheduleEmailAddress: r.ScheduleEmailAddress, DtScheduleD: &d}}
}
