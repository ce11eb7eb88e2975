package synth

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/fleetapi/fleetapi/storage"
)

// genTable is one table of the generated data set and the function that
// writes its rows.
type genTable struct {
	name    string
	columns []string
	write   func(*copier) error
}

func (p *genPlan) tables() []genTable {
	p.imeis = make([]string, p.cfg.Devices)
	for d := range p.imeis {
		p.imeis[d] = imeiOf(d)
	}
	return []genTable{
		{"accounts", []string{"id", "username", "email", "type", "manager_id", "active", "read_only",
			"account_expire", "account_expire_dt", "privileges"}, p.writeAccounts},
		{"objects", []string{"id", "imei", "account_id", "name", "odometer", "engine_hours"}, p.writeObjects},
		{"object_grants", []string{"subaccount_id", "imei"}, p.writeGrants},
		{"services", []string{"service_id", "account_id", "imei", "name", "odo", "odo_interval", "odo_last",
			"engh", "engh_interval", "engh_last", "days", "days_interval", "days_last", "odo_left", "odo_left_num",
			"engh_left", "engh_left_num", "days_left", "days_left_num", "update_last", "notify_service_expire", "extra"}, p.writeServices},
		{"reports", []string{"report_id", "account_id", "name", "type", "format", "show_addresses", "zones_addresses",
			"show_trip_image", "stop_duration", "speed_limit", "imei", "zone_ids", "sensor_names", "data_items",
			"schedule_period", "schedule_email_address", "dt_schedule_d", "dt_schedule_w"}, p.writeReports},
		{"events", []string{"event_id", "account_id", "type", "name", "active", "week_days", "day_time", "imei",
			"checked_value", "route_trigger", "zone_trigger", "routes", "zones", "notify_system", "notify_email",
			"notify_email_address", "notify_sms", "notify_sms_number", "notify_telegram", "email_template_id",
			"sms_template_id", "cmd_send", "cmd_gateway", "cmd_type", "cmd_string"}, p.writeEvents},
		{"passengers", []string{"passenger_id", "account_id", "passenger_name", "passenger_assign_id", "passenger_idn",
			"passenger_address", "passenger_phone", "passenger_email", "passenger_desc", "passenger_client_id",
			"passenger_active", "passenger_pickup_point_id"}, p.writePassengers},
	}
}

// imeiOf returns the 15-digit IMEI of device d: a TAC, a 6-digit serial
// number and the Luhn check digit.
func imeiOf(d int) string {
	body := fmt.Sprintf("%s%06d", imeiTACs[d/1_000_000], d%1_000_000)
	sum := 0
	for i := len(body) - 1; i >= 0; i-- {
		n := int(body[i] - '0')
		if (len(body)-1-i)%2 == 0 {
			n *= 2
			if n > 9 {
				n -= 9
			}
		}
		sum += n
	}
	return body + string(rune('0'+(10-sum%10)%10))
}

func (p *genPlan) writeAccounts(c *copier) error {
	today := p.cfg.Today
	if err := c.next().Int(p.adminID()).Text("gen-admin").Text("admin@gen.example").Text("admin").Null().
		Bool(true).Bool(false).Bool(false).Null().TextArray(nil).end(c); err != nil {
		return err
	}
	for m := range p.cfg.Managers {
		name := managerName(m)
		if err := c.next().Int(p.managerID(m)).Text(name).Text(name + "@gen.example").Text("manager").Int(p.adminID()).
			Bool(true).Bool(false).Bool(false).Null().TextArray(nil).end(c); err != nil {
			return err
		}
	}
	for u, m := range p.userManager {
		name, f := userName(u), p.userFlags[u]
		row := c.next().Int(p.userID(u)).Text(name).Text(name + "@gen.example").Text("user").Int(p.managerID(m)).
			Bool(f&userInactive == 0).Bool(f&userReadOnly != 0).Bool(f&userExpired != 0)
		if f&userExpired != 0 {
			row.Date(today.AddDate(0, 0, -30))
		} else {
			row.Null()
		}
		if err := row.TextArray(nil).end(c); err != nil {
			return err
		}
	}
	for s, u := range p.subParent {
		name := subaccountName(s)
		if err := c.next().Int(p.subaccountID(s)).Text(name).Text(name + "@gen.example").Text("subaccount").Int(p.userID(u)).
			Bool(true).Bool(false).Bool(false).Null().TextArray(p.subPrivileges[s]).end(c); err != nil {
			return err
		}
	}
	return nil
}

func (p *genPlan) writeObjects(c *copier) error {
	counters := make(map[[2]int]int)
	for d, u := range p.deviceOwner {
		t := p.deviceType[d]
		counters[[2]int{u, t}]++
		name := fmt.Sprintf("%s %d", vehicleTypes[t].name, counters[[2]int{u, t}])
		if err := c.next().Int(int64(d + 1)).Text(p.imeis[d]).Int(p.userID(u)).Text(name).
			Int(p.odometer[d]).Int(p.engineHours[d]).end(c); err != nil {
			return err
		}
	}
	return nil
}

// writeGrants grants each subaccount 1 to Grants of its parent's devices
// (the harness subaccount gets 5, or all its parent has).
func (p *genPlan) writeGrants(c *copier) error {
	r := p.rng(streamGrants)
	for s, u := range p.subParent {
		devices := append([]int(nil), p.userDevices[u]...)
		n := 1 + r.IntN(min(p.cfg.Grants, len(devices)))
		if s == p.harnessSub {
			n = min(5, len(devices))
		}
		r.Shuffle(len(devices), func(i, j int) { devices[i], devices[j] = devices[j], devices[i] })
		for _, d := range devices[:n] {
			if err := c.next().Int(p.subaccountID(s)).Text(p.imeis[d]).end(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// spread returns per-item counts that add up to total: total/items each,
// plus one for a random set of total%items items.
func spread(r *rand.Rand, total, items int) []int {
	counts := make([]int, items)
	for i := range counts {
		counts[i] = total / items
	}
	for _, i := range r.Perm(items)[:total%items] {
		counts[i]++
	}
	return counts
}

// rounds calls emit(item, j) for j = 0, 1, ... over every item that has a
// j-th row, round after round, so that the rows of one item are spread
// over the table.
func rounds(counts []int, order []int, emit func(item, j int) error) error {
	most := 0
	for _, n := range counts {
		most = max(most, n)
	}
	for j := range most {
		for _, i := range order {
			if j < counts[i] {
				if err := emit(i, j); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (p *genPlan) writeServices(c *copier) error {
	if p.cfg.Services == 0 {
		return nil
	}
	r := p.rng(streamServices)
	counts := spread(r, p.cfg.Services, p.cfg.Devices)
	eligible := eligibleKinds()
	kinds := make([][]int, p.cfg.Devices)
	for d, n := range counts {
		kinds[d] = drawKinds(r, eligible[p.deviceType[d]], n)
	}
	order := make([]int, p.cfg.Devices)
	for d := range order {
		order[d] = d
	}
	id := int64(0)
	return rounds(counts, order, func(d, j int) error {
		id++
		return p.serviceRow(c.next().Int(id), r, d, serviceKinds[kinds[d][j]]).end(c)
	})
}

// drawKinds draws n distinct service kinds from eligible, by weight.
func drawKinds(r *rand.Rand, eligible []int, n int) []int {
	pool := append([]int(nil), eligible...)
	out := make([]int, 0, n)
	for range n {
		w := make([]int, len(pool))
		for i, k := range pool {
			w[i] = serviceKinds[k].weight
		}
		i := weightedIndex(r, w)
		out = append(out, pool[i])
		pool = append(pool[:i], pool[i+1:]...)
	}
	return out
}

// serviceRow writes a service of kind k on device d. Each criterion's last
// value is the current reading minus a used share of its interval drawn
// from [0, 1.1): about 9% of criteria have run out, and with the *_left
// warnings some more are due soon.
func (p *genPlan) serviceRow(row *copyRow, r *rand.Rand, d int, k serviceKind) *copyRow {
	odoInterval, enghInterval := k.odo, k.engh
	if vehicleTypes[p.deviceType[d]].hoursOnly && odoInterval > 0 {
		enghInterval, odoInterval = max(50, odoInterval/40), 0
	}
	used := func(interval int) int64 { return int64(r.Float64() * 1.1 * float64(interval)) }
	row.Int(p.userID(p.deviceOwner[d])).Text(p.imeis[d]).Text(k.name)
	var odoLeft, enghLeft, daysLeft bool
	if odoInterval > 0 {
		odoLeft = r.IntN(10) < 6
		row.Bool(true).Int(int64(odoInterval)).Int(max(0, p.odometer[d]-used(odoInterval)))
	} else {
		row.Bool(false).Int(0).Int(0)
	}
	if enghInterval > 0 {
		enghLeft = r.IntN(10) < 6
		row.Bool(true).Int(int64(enghInterval)).Int(max(0, p.engineHours[d]-used(enghInterval)))
	} else {
		row.Bool(false).Int(0).Int(0)
	}
	if k.days > 0 {
		daysLeft = r.IntN(10) < 6
		row.Bool(true).Int(int64(k.days)).Date(p.cfg.Today.AddDate(0, 0, -int(used(k.days))))
	} else {
		row.Bool(false).Int(0).Null()
	}
	row.Bool(odoLeft).Int(leftNum(odoLeft, odoInterval)).
		Bool(enghLeft).Int(leftNum(enghLeft, enghInterval)).
		Bool(daysLeft).Int(leftNum(daysLeft, k.days)).
		Bool(r.IntN(4) == 0).Bool(r.IntN(2) == 0)
	if r.IntN(10) == 0 {
		row.Text(`{"workshop": "` + workshops[r.IntN(len(workshops))] + `"}`)
	} else {
		row.Text("{}")
	}
	return row
}

func leftNum(on bool, interval int) int64 {
	if !on {
		return 0
	}
	return int64(max(1, interval/10))
}

// perUser returns how many rows each user gets and the order in which
// users take turns (shuffled).
func (p *genPlan) perUser(r *rand.Rand, total int) ([]int, []int) {
	return spread(r, total, p.cfg.Users), r.Perm(p.cfg.Users)
}

// perUserRows calls emit for total rows of a table owned by users, drawn
// from stream: with the stream, the row's id (1, 2, ...), its user u and
// its number j among u's rows, in the rounds of perUser's order.
func (p *genPlan) perUserRows(stream uint64, total int, emit func(r *rand.Rand, id int64, u, j int) error) error {
	r := p.rng(stream)
	counts, order := p.perUser(r, total)
	id := int64(0)
	return rounds(counts, order, func(u, j int) error {
		id++
		return emit(r, id, u, j)
	})
}

// someDevices draws 1 to 3 distinct devices of user u, as IMEIs.
func (p *genPlan) someDevices(r *rand.Rand, u int) []string {
	devs := p.userDevices[u]
	n := 1 + r.IntN(min(3, len(devs)))
	out := make([]string, 0, n)
	for _, i := range r.Perm(len(devs))[:n] {
		out = append(out, p.imeis[devs[i]])
	}
	return out
}

func (p *genPlan) writeReports(c *copier) error {
	return p.perUserRows(streamReports, p.cfg.Reports, func(r *rand.Rand, id int64, u, j int) error {
		typ := reportTypes[r.IntN(len(reportTypes))]
		period := storage.SchedulePeriods()[r.IntN(4)]
		email := ""
		if period != "" {
			email = userName(u) + "@gen.example"
		}
		row := c.next().Int(id).Int(p.userID(u)).Text(fmt.Sprintf("%s #%d", typ[1], j+1)).Text(typ[0]).
			Text(reportFormats[r.IntN(len(reportFormats))]).Bool(r.IntN(2) == 0).Bool(r.IntN(4) == 0).Bool(r.IntN(8) == 0).
			Int(int64(r.IntN(4) * 5)).Int(int64(80 + r.IntN(5)*10)).
			TextArray(p.someDevices(r, u)).TextArray(zones(r, 2)).TextArray(nil).
			TextArray([]string{"route_start", "route_end", "route_length", "move_duration"}[:1+r.IntN(4)]).
			Text(period).Text(email)
		p.scheduleTime(row, strings.Contains(period, "d"), 1)
		p.scheduleTime(row, strings.Contains(period, "w"), 1+r.IntN(7))
		return row.end(c)
	})
}

// scheduleTime writes the next run of a schedule, days after Today at
// 06:00 UTC, or NULL when the schedule is off.
func (p *genPlan) scheduleTime(row *copyRow, on bool, days int) {
	if !on {
		row.Null()
		return
	}
	row.Time(p.cfg.Today.AddDate(0, 0, days).Add(6 * time.Hour))
}

// zones draws up to most zone ids.
func zones(r *rand.Rand, most int) []string {
	n := r.IntN(most + 1)
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("zone-%d", 1+r.IntN(40))
	}
	if n == 2 && out[0] == out[1] {
		out = out[:1]
	}
	return out
}

func (p *genPlan) writeEvents(c *copier) error {
	days := storage.WeekDays()
	return p.perUserRows(streamEvents, p.cfg.Events, func(r *rand.Rand, id int64, u, j int) error {
		typ := eventTypes[r.IntN(len(eventTypes))]
		week := days
		if r.IntN(3) == 0 {
			week = days[:5]
		}
		dayTime := "{}"
		if r.IntN(3) == 0 {
			dayTime = `{"from": "08:00", "to": "18:00"}`
		}
		checked, zoneTrigger, zs := evaluableValue(r, typ[0]), "off", []string(nil)
		switch typ[0] {
		case "zone_in", "zone_out":
			zoneTrigger, zs = strings.TrimPrefix(typ[0], "zone_"), zones(r, 2)
		}
		email, sms := r.IntN(2) == 0, r.IntN(5) == 0
		row := c.next().Int(id).Int(p.userID(u)).Text(typ[0]).Text(fmt.Sprintf("%s #%d", typ[1], j+1)).Bool(r.IntN(5) != 0).
			TextArray(week).Text(dayTime).TextArray(p.someDevices(r, u)).Text(checked).Text("off").Text(zoneTrigger).
			TextArray(nil).TextArray(zs).Bool(true).Bool(email)
		row.Text(ifThen(email, userName(u)+"@gen.example")).Bool(sms).Text(ifThen(sms, fmt.Sprintf("+4477009%05d", u%100_000))).
			Bool(r.IntN(4) == 0).Int(int64(r.IntN(4))).Int(int64(r.IntN(3))).Bool(false).Text("gprs").Text("ascii").Text("")
		return row.end(c)
	})
}

// paramRules are the param expressions the generator draws from: what a
// fleet watches on its trackers' attributes.
var paramRules = []string{"fuel < 10", "temp1 > 8", "temp1 < -18", "door = 1"}

// evaluableValue draws the checked_value of a rule of type typ as a fleet
// sets it (docs/design.md §14): an overspeed limit of 90 to 130 km/h, a
// param expression, a fuel drop of 10 to 30, minutes of stop (10 to 30) or
// of silence (30 to 120); "" for the types that take none.
func evaluableValue(r *rand.Rand, typ string) string {
	switch typ {
	case "overspeed":
		return fmt.Sprint(90 + 10*r.IntN(5))
	case "param":
		return paramRules[r.IntN(len(paramRules))]
	case "fuel_drop":
		return fmt.Sprint(10 + 5*r.IntN(5))
	case "stopped":
		return fmt.Sprint(10 * (1 + r.IntN(3)))
	case "connection_no":
		return fmt.Sprint(30 * (1 + r.IntN(4)))
	}
	return ""
}

func ifThen(on bool, s string) string {
	if on {
		return s
	}
	return ""
}

func (p *genPlan) writePassengers(c *copier) error {
	return p.perUserRows(streamPassengers, p.cfg.Passengers, func(r *rand.Rand, id int64, u, j int) error {
		first, last := firstNames[r.IntN(len(firstNames))], lastNames[r.IntN(len(lastNames))]
		row := c.next().Int(id).Int(p.userID(u)).Text(first + " " + last).Text(fmt.Sprintf("EMP-%05d", j+1)).
			Text(fmt.Sprintf("%08d", r.IntN(100_000_000))).Text(fmt.Sprintf("%d Harbour Road, Springfield", 1+r.IntN(200))).
			Text(fmt.Sprintf("+4477009%05d", r.IntN(100_000))).
			Text(strings.ToLower(fmt.Sprintf("%s.%s%d@gen.example", first, last, j+1))).Text("").
			Text(fmt.Sprintf("C-%04d", 1+r.IntN(9999))).Bool(r.IntN(20) != 0)
		if r.IntN(2) == 0 {
			row.Int(int64(1 + r.IntN(50)))
		} else {
			row.Null()
		}
		return row.end(c)
	})
}
