package api

import (
	"time"

	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/storage"
)

// registerReports declares GET /reports, a list route of the reports
// resource (its rows are their own wire form).
func (s *Server) registerReports(g *fuego.Server) {
	listRoute(g, s, storage.Reports, same[storage.Report], authErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("get_reports"), fuego.OptionTags("Reports"),
		fuego.OptionSummary("Paged list of reports"),
		fuego.OptionDescription("The report definitions the caller may see. Needs the token permission GET /reports; a subaccount also needs the reports privilege. " +
			"A report naming a device that is not granted to a subaccount is not listed for it."),
		respondsPage(reportSchema(), []storage.Report{exampleReport()}),
	})
}

// reportSchema is the Report component.
func reportSchema() wireType {
	return wireType{name: "Report", value: storage.Report{}, description: "A report definition (docs/api.md §7).", fields: map[string][]fieldOpt{
		"report_id":              {desc("Id of the report."), minimum(1)},
		"name":                   {desc("Name of the report.")},
		"type":                   {desc(`Kind of report, for example "drives_stops".`)},
		"format":                 {desc(`Output format, for example "pdf".`)},
		"show_addresses":         {desc("Whether addresses are shown.")},
		"zones_addresses":        {desc("Whether zone names replace addresses.")},
		"show_trip_image":        {desc("Whether a trip map is included.")},
		"stop_duration":          {desc("Shortest stop reported (minutes).")},
		"speed_limit":            {desc("Speed limit (km/h).")},
		"imei":                   {desc("IMEIs of the devices the report covers.")},
		"zone_ids":               {desc("Zones the report covers.")},
		"sensor_names":           {desc("Sensors the report covers.")},
		"data_items":             {desc("Data columns of the report.")},
		"schedule_period":        {enum(storage.SchedulePeriods()...), desc(`Schedule: "" (none), "d" (daily), "w" (weekly) or "dw" (both).`)},
		"schedule_email_address": {desc("Where scheduled reports are sent.")},
		"dt_schedule_d":          {nullable(), desc("Next daily run (RFC 3339), or null.")},
		"dt_schedule_w":          {nullable(), desc("Next weekly run (RFC 3339), or null.")},
	}}
}

func exampleReport() storage.Report {
	return storage.Report{
		ReportID: 2, Name: "Daily stops", Type: "drives_stops", Format: "pdf",
		ShowAddresses: true, StopDuration: 5, SpeedLimit: 90,
		IMEI: storage.StringList{"356938035643809"}, ZoneIDs: storage.StringList{}, SensorNames: storage.StringList{},
		DataItems: storage.StringList{"route_start", "route_end"}, SchedulePeriod: "d",
		ScheduleEmailAddress: "ops@acme.example", DtScheduleD: ptr(time.Date(2026, 1, 2, 6, 0, 0, 0, time.UTC)),
	}
}
