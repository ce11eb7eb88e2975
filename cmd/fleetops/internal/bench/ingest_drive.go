package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"time"

	"github.com/uptrace/bun"
)

// The simulated drive of the ingest workload: every device of the data set
// (or the first --ingest-devices) drives the same cycle of 12 readings,
// each device at its own phase, so that at any moment devices of every
// account are accelerating, speeding, braking and parked. A cycle crosses
// every overspeed threshold the generator draws (90 to 130 km/h) up and
// down once, switches the ignition off and on, lets the fuel fall below 10
// and rise again and the temperature cross 8: the generated overspeed,
// ignition_on/off and param rules fire now and then and re-arm, as a real
// fleet's do. Each reading is the next step; a device's step goes on from
// its stored state (the heading of its newest reading names the step), so
// a run continues the drive of the run before it instead of repeating it.

// driveSpeeds is the speed (km/h) of each step of the cycle.
var driveSpeeds = [...]float64{0, 0, 35, 70, 95, 118, 136, 112, 88, 60, 30, 8}

// driveStep is the simulated time a step stands for (the odometer's and
// engine hours' advance); the reading's time is the wall clock's.
const driveStep = 20 * time.Second

// device is one driven device: what the drive needs to continue it.
type device struct {
	imei      string
	accountID int64
	// managerID is the manager above the owner (the owner itself when it
	// has none): whose gateway token posts for the device.
	managerID int64
	phase     int
	step      int
	odometer  float64
	hours     float64
	// lastMS is the time of its newest reading (Unix milliseconds): the
	// next one is later, so that each device's readings move forward.
	lastMS int64
	// reported is whether the device had a reading before the run.
	reported bool
}

// reading is one reading as the harness sends it, the JSON item of POST
// /readings (docs/design.md §14); the floor converts it for storage.
type reading struct {
	IMEI        string         `json:"imei"`
	Time        time.Time      `json:"time"`
	Lat         float64        `json:"lat"`
	Lon         float64        `json:"lon"`
	Speed       float64        `json:"speed"`
	Heading     float64        `json:"heading"`
	Altitude    float64        `json:"altitude"`
	Odometer    float64        `json:"odometer"`
	EngineHours float64        `json:"engine_hours"`
	Ignition    bool           `json:"ignition"`
	Attributes  map[string]any `json:"attributes"`
}

// loadFleet reads the devices to drive from the database: every device,
// or the first limit by id when limit > 0, the longest silent first. Each
// starts at its stored odometer and engine hours and the step after its
// newest reading's.
func loadFleet(ctx context.Context, db *bun.DB, limit int) ([]*device, error) {
	var rows []struct {
		IMEI      string   `bun:"imei"`
		AccountID int64    `bun:"account_id"`
		ManagerID int64    `bun:"manager_id"`
		Odometer  *float64 `bun:"odometer"`
		Hours     *float64 `bun:"engine_hours"`
		Reported  bool     `bun:"reported"`
		Heading   *float64 `bun:"heading"`
	}
	// The devices in id order (the first limit), then the longest silent
	// first: a run continues with the devices the last run did not reach.
	q := `SELECT o.imei, o.account_id, coalesce(a.manager_id, a.id) AS manager_id, o.odometer::float8 AS odometer,
		o.engine_hours::float8 AS engine_hours, o.last_time IS NOT NULL AS reported, o.heading
		FROM (SELECT * FROM objects ORDER BY id LIMIT ?) o JOIN accounts a ON a.id = o.account_id
		ORDER BY o.last_time NULLS FIRST, o.id`
	n := int64(limit)
	if n <= 0 {
		n = math.MaxInt64
	}
	if err := db.NewRaw(q, n).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("devices: %w", err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("devices: the database holds none")
	}
	out := make([]*device, len(rows))
	for i, r := range rows {
		d := &device{imei: r.IMEI, accountID: r.AccountID, managerID: r.ManagerID, phase: phaseOf(r.IMEI), reported: r.Reported}
		if r.Odometer != nil {
			d.odometer = *r.Odometer
		}
		if r.Hours != nil {
			d.hours = *r.Hours
		}
		if r.Heading != nil {
			d.resume(int(*r.Heading) / headingPerStep)
		}
		out[i] = d
	}
	return out, nil
}

// phaseOf spreads the devices over the cycle, the same for a device in
// every run.
func phaseOf(imei string) int {
	f := fnv.New32a()
	f.Write([]byte(imei))
	return int(f.Sum32() % uint32(len(driveSpeeds)))
}

// headingPerStep is the heading of step s: s × 30°, which names the step
// of a device's newest reading in its stored state.
const headingPerStep = 30

// resume continues the drive after a reading of step last: the next
// reading is step last+1.
func (d *device) resume(last int) {
	n := len(driveSpeeds)
	d.step = ((last+1-d.phase)%n + n) % n
}

// next is the device's next reading at the wall-clock time now: the next
// step of its cycle, at a time after its previous reading's.
func (d *device) next(now time.Time) reading {
	ms := max(now.UnixMilli(), d.lastMS+1)
	d.lastMS = ms
	s := (d.step + d.phase) % len(driveSpeeds)
	d.step++
	speed := driveSpeeds[s]
	d.odometer += speed * driveStep.Hours()
	if speed > 0 {
		d.hours += driveStep.Hours()
	}
	return reading{
		IMEI:        d.imei,
		Time:        time.UnixMilli(ms).UTC(),
		Lat:         50 + float64(d.phase)/100 + float64(s)/1000,
		Lon:         10 + float64(s)/500,
		Speed:       speed,
		Heading:     float64(headingPerStep * s),
		Altitude:    120,
		Odometer:    round1(d.odometer),
		EngineHours: round1(d.hours),
		Ignition:    speed > 0,
		// fuel falls 7 a step from 80 (below 10 at the cycle's end), the
		// temperature rises 1 a step from 4 (above 8 at steps 5 and 11)
		Attributes: map[string]any{"fuel": float64(80 - 7*s), "temp1": float64(4 + s%6)},
	}
}

// round1 rounds to one decimal, as a tracker reports.
func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }

// feed is the devices one gateway posts for with one token: a batch is
// one feed's, posted with its token.
type feed struct {
	member  member
	devices []*device
	next    int
}

// gateway is one client of the workload: it posts for its own share of
// the devices, round robin over its feeds and each feed's devices, so each
// device's readings leave in time order from one client (as a real
// gateway keeps a device's connection).
type gateway struct {
	feeds []*feed
	next  int
}

// gateways deals the devices out to n gateways. With one token for all
// (tokens nil: the gateway's member), device i goes to gateway i mod n, so
// every gateway posts for devices of many accounts. With a token per
// manager (tokens by manager account id), each manager's devices are one
// feed, and the feeds go to the gateways largest first, each to the
// gateway with the fewest devices so far; devices of a manager without a
// token are left out and counted.
func gateways(devs []*device, n int, one member, tokens map[int64]member) (out []*gateway, left int) {
	out = make([]*gateway, n)
	for i := range out {
		out[i] = &gateway{}
	}
	if tokens == nil {
		for i, d := range devs {
			g := out[i%n]
			if len(g.feeds) == 0 {
				g.feeds = []*feed{{member: one}}
			}
			g.feeds[0].devices = append(g.feeds[0].devices, d)
		}
		return out, 0
	}
	byManager := map[int64]*feed{}
	var feeds []*feed
	for _, d := range devs {
		f := byManager[d.managerID]
		if f == nil {
			m, ok := tokens[d.managerID]
			if !ok {
				left++
				continue
			}
			f = &feed{member: m}
			byManager[d.managerID] = f
			feeds = append(feeds, f)
		}
		f.devices = append(f.devices, d)
	}
	slices.SortStableFunc(feeds, func(a, b *feed) int { return len(b.devices) - len(a.devices) })
	sizes := make([]int, n)
	for _, f := range feeds {
		i := slices.Index(sizes, slices.Min(sizes))
		out[i].feeds = append(out[i].feeds, f)
		sizes[i] += len(f.devices)
	}
	return out, left
}

// devices are all the gateway's devices.
func (g *gateway) devices() []*device {
	var out []*device
	for _, f := range g.feeds {
		out = append(out, f.devices...)
	}
	return out
}

// batch is the next feed's next size readings (fewer when the feed has
// fewer devices: a batch never holds a device twice); nil for a gateway
// without devices.
func (g *gateway) batch(size int, now time.Time) (*feed, []reading) {
	if len(g.feeds) == 0 {
		return nil, nil
	}
	f := g.feeds[g.next]
	g.next = (g.next + 1) % len(g.feeds)
	size = min(size, len(f.devices))
	out := make([]reading, size)
	for i := range out {
		out[i] = f.devices[f.next].next(now)
		f.next = (f.next + 1) % len(f.devices)
	}
	return f, out
}

// unreported are the feed's devices without a reading yet.
func (f *feed) unreported() []*device {
	var out []*device
	for _, d := range f.devices {
		if !d.reported {
			out = append(out, d)
		}
	}
	return out
}

// readingsBody is the body of POST /readings for rs.
func readingsBody(rs []reading) ([]byte, error) {
	return json.Marshal(struct {
		Readings []reading `json:"readings"`
	}{rs})
}

// readingKey identifies a reading (docs/design.md §14: imei and time) to
// match a notification with the batch that carried its reading.
type readingKey struct {
	imei string
	ms   int64
}
