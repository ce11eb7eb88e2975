package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/cli"
)

// testFleet is n devices of the drive, as loadFleet makes them.
func testFleet(n int) []*device {
	out := make([]*device, n)
	for i := range out {
		imei := fmt.Sprintf("35%013d", i)
		out[i] = &device{imei: imei, accountID: int64(1 + i%7), managerID: int64(100 + i%7%3), phase: phaseOf(imei), odometer: 1000}
	}
	return out
}

// TestDriveForward: with one token the gateways share the devices out
// (every device to exactly one, each gateway with devices of many
// accounts), a batch never holds a device twice, and each device's
// readings move forward in time even when the clock stands still or goes
// back.
func TestDriveForward(t *testing.T) {
	devs := testFleet(103)
	admin := member{token: "admin"}
	gws, left := gateways(devs, 4, admin, nil)
	seen := map[string]int{}
	for i, g := range gws {
		accounts := map[int64]bool{}
		for _, d := range g.devices() {
			seen[d.imei]++
			accounts[d.accountID] = true
		}
		if len(g.feeds) != 1 || g.feeds[0].member.token != "admin" || len(g.devices()) < 25 || len(accounts) < 7 {
			t.Errorf("gateway %d: %d feeds, %d devices of %d accounts", i, len(g.feeds), len(g.devices()), len(accounts))
		}
	}
	if len(seen) != len(devs) || left != 0 {
		t.Fatalf("%d devices dealt (%d left out), want %d", len(seen), left, len(devs))
	}
	for imei, n := range seen {
		if n != 1 {
			t.Fatalf("%s dealt %d times", imei, n)
		}
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	last := map[string]time.Time{}
	for round := range 40 {
		clock := now.Add(-time.Duration(round%3) * time.Millisecond) // stands still, goes back
		f, rs := gws[round%4].batch(10, clock)
		if f != gws[round%4].feeds[0] {
			t.Fatal("the batch is not the gateway's feed's")
		}
		imeis := map[string]bool{}
		for _, r := range rs {
			if imeis[r.IMEI] {
				t.Fatalf("round %d: %s twice in a batch", round, r.IMEI)
			}
			imeis[r.IMEI] = true
			if prev, ok := last[r.IMEI]; ok && !r.Time.After(prev) {
				t.Fatalf("%s: reading at %s after one at %s", r.IMEI, r.Time, prev)
			}
			last[r.IMEI] = r.Time
		}
	}
	// A batch larger than a gateway's share holds each of its devices once.
	if _, rs := gws[0].batch(500, now); len(rs) != len(gws[0].devices()) {
		t.Fatalf("batch of %d for %d devices", len(rs), len(gws[0].devices()))
	}
}

// TestDriveManagers: with a token per manager, each manager's devices are
// one feed posted with its token, every batch holds one manager's devices,
// the feeds are spread over the gateways, and the devices of a manager
// without a token are left out.
func TestDriveManagers(t *testing.T) {
	devs := testFleet(210) // managers 100, 101, 102: 90, 60 and 60 devices
	tokens := map[int64]member{100: {token: "m100"}, 101: {token: "m101"}}
	gws, left := gateways(devs, 2, member{}, tokens)
	if left != 60 {
		t.Fatalf("%d devices left out, want manager 102's 60", left)
	}
	for i, g := range gws {
		if len(g.feeds) != 1 {
			t.Fatalf("gateway %d: %d feeds, want one (two feeds, two gateways)", i, len(g.feeds))
		}
		want := map[string]int64{"m100": 100, "m101": 101}[g.feeds[0].member.token]
		for round := range 5 {
			f, rs := g.batch(25, time.Now())
			for _, r := range rs {
				var d *device
				for _, x := range f.devices {
					if x.imei == r.IMEI {
						d = x
					}
				}
				if d == nil || d.managerID != want {
					t.Fatalf("gateway %d round %d: %s is not a device of manager %d", i, round, r.IMEI, want)
				}
			}
		}
	}
}

// TestDriveFires: one cycle of a device crosses every generated overspeed
// limit (90 to 130 km/h) upwards once and back below it, switches the
// ignition off and on once each, takes the fuel below 10 and the
// temperature above 8; the odometer never goes back.
func TestDriveFires(t *testing.T) {
	d := testFleet(1)[0]
	now := time.Now()
	var rs []reading
	for range 2 * len(driveSpeeds) {
		rs = append(rs, d.next(now))
	}
	for limit := 90.0; limit <= 130; limit += 10 {
		ups, downs := 0, 0
		for i := 1; i < len(rs); i++ {
			if rs[i-1].Speed <= limit && rs[i].Speed > limit {
				ups++
			}
			if rs[i-1].Speed > limit && rs[i].Speed <= limit {
				downs++
			}
		}
		if ups < 1 || downs < 1 || ups > 2 {
			t.Errorf("limit %.0f: crossed up %d and down %d times in two cycles", limit, ups, downs)
		}
	}
	on, off, fuelLow, hot := 0, 0, false, false
	for i := 1; i < len(rs); i++ {
		if !rs[i-1].Ignition && rs[i].Ignition {
			on++
		}
		if rs[i-1].Ignition && !rs[i].Ignition {
			off++
		}
		if rs[i].Odometer < rs[i-1].Odometer {
			t.Fatalf("odometer back from %v to %v", rs[i-1].Odometer, rs[i].Odometer)
		}
		fuelLow = fuelLow || rs[i].Attributes["fuel"].(float64) < 10
		hot = hot || rs[i].Attributes["temp1"].(float64) > 8
	}
	if on < 1 || off < 1 || !fuelLow || !hot {
		t.Errorf("two cycles: ignition on %d off %d, fuel below 10 %v, temp1 above 8 %v", on, off, fuelLow, hot)
	}
}

// TestDriveResumes: a device resumed from the heading of its newest
// reading continues with the next step, whatever its phase.
func TestDriveResumes(t *testing.T) {
	for _, d := range testFleet(30) {
		for last := range len(driveSpeeds) {
			d.resume(last)
			r := d.next(time.Now())
			if want := (last + 1) % len(driveSpeeds); int(r.Heading)/headingPerStep != want || r.Speed != driveSpeeds[want] {
				t.Fatalf("%s (phase %d) after step %d: heading %v speed %v, want step %d", d.imei, d.phase, last, r.Heading, r.Speed, want)
			}
		}
	}
}

// TestReadingsBody: the body is the §14 shape, one item per reading with
// its fields and nothing else, the time in RFC 3339 with milliseconds.
func TestReadingsBody(t *testing.T) {
	d := testFleet(1)[0]
	r := d.next(time.Date(2026, 11, 29, 12, 0, 0, 123_456_789, time.UTC))
	b, err := readingsBody([]reading{r})
	if err != nil {
		t.Fatal(err)
	}
	var body map[string][]map[string]any
	if err := json.Unmarshal(b, &body); err != nil || len(body) != 1 || len(body["readings"]) != 1 {
		t.Fatalf("%s: %v", b, err)
	}
	item := body["readings"][0]
	var keys []string
	for k := range item {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"altitude", "attributes", "engine_hours", "heading", "ignition", "imei", "lat", "lon", "odometer", "speed", "time"}
	if !slices.Equal(keys, want) {
		t.Fatalf("fields %v, want %v", keys, want)
	}
	if item["time"] != "2026-11-29T12:00:00.123Z" || item["imei"] != d.imei {
		t.Fatalf("time %v imei %v", item["time"], item["imei"])
	}
}

// TestReadEvents: the stream reader splits events at blank lines, joins
// data lines, skips comments (heartbeats) and names an untyped event
// "message".
func TestReadEvents(t *testing.T) {
	in := ": heartbeat\n\nid: 7\nevent: notification\ndata: {\"imei\":\"1\",\ndata: \"time\":\"2026-11-29T12:00:00.5Z\"}\n\n" +
		"retry: 1000\n\ndata: plain\n\n: another comment\nid: 8\nevent: notification\ndata: {}\n\n"
	var got []string
	err := readEvents(strings.NewReader(in), func(id, event, data string) { got = append(got, id+"|"+event+"|"+data) })
	// "retry" alone makes an event without data, which the harness ignores
	want := []string{"7|notification|{\"imei\":\"1\",\n\"time\":\"2026-11-29T12:00:00.5Z\"}", "|message|", "|message|plain", "8|notification|{}"}
	if !slices.Equal(got, want) || err == nil {
		t.Fatalf("events %q (%v), want %q", got, err, want)
	}
}

// TestStreamLatency: a streamed notification is matched to the batch
// that carried its reading by imei and time; another device's, an
// unwatched device's or a malformed one is counted unmatched.
func TestStreamLatency(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 250_000_000, time.UTC)
	log := newSentLog(map[string]bool{"111": true})
	sent := time.Now()
	log.record([]reading{{IMEI: "111", Time: at}, {IMEI: "222", Time: at}}, sent)
	w := &streamWatch{log: log, done: make(chan struct{}), cancel: func() {}}
	close(w.done)
	w.note(`{"id":1,"type":"overspeed","imei":"111","time":"2026-11-29T12:00:00.25Z"}`, sent.Add(40*time.Millisecond))
	w.note(`{"id":2,"type":"overspeed","imei":"222","time":"2026-11-29T12:00:00.25Z"}`, sent)
	w.note(`{"id":3,"type":"overspeed","imei":"111","time":"2026-11-29T12:00:01Z"}`, sent)
	w.note(`not json`, sent)
	r := w.stop(0)
	if r.events != 4 || r.matched != 1 || r.unmatched != 3 || r.latency.P50 != 40*time.Millisecond {
		t.Fatalf("%+v", r)
	}
}

// TestReadingsAnswer: the answer is read bare or in the envelope's data;
// one without accepted is an error.
func TestReadingsAnswer(t *testing.T) {
	for _, body := range []string{
		`{"accepted":498,"duplicates":1,"rejected":[{"index":3,"code":"INVALID_READING","message":"speed","field":"speed"}]}`,
		`{"success":true,"data":{"accepted":498,"duplicates":1,"rejected":[{"index":3,"code":"INVALID_READING","message":"speed"}]}}`,
	} {
		out, err := readingsAnswer([]byte(body))
		if err != nil || out.accepted != 498 || out.duplicates != 1 || out.rejected != 1 || !strings.Contains(out.firstRejection, "item 3 INVALID_READING") {
			t.Errorf("%s: %+v %v", body, out, err)
		}
	}
	if _, err := readingsAnswer([]byte(`{"success":true,"data":{}}`)); err == nil {
		t.Error("an answer without accepted was read")
	}
}

// TestIngestConfig: --workload ingest selects no read scenario of its own,
// and the ingest flags are bounded.
func TestIngestConfig(t *testing.T) {
	env := func(string) string { return "" }
	c, err := parseConfig([]string{"--tokens", "t", "--workload", "ingest"}, env, &bytes.Buffer{})
	if err != nil || c.Scenarios != "" || c.Batch != 500 || c.IngestDuration != time.Minute || c.GatewayRole != "manager" || c.StreamRole != "manager" {
		t.Fatalf("%+v, %v", c, err)
	}
	for _, args := range [][]string{
		{"--batch", "0"}, {"--batch", "1001"}, {"--ingest-duration", "0s"}, {"--ingest-duration", "11m"},
		{"--ingest-devices", "-1"}, {"--ingest-rate", "-5"},
	} {
		if _, err := parseConfig(append([]string{"--tokens", "t", "--workload", "ingest"}, args...), env, &bytes.Buffer{}); !cli.IsUsage(err) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}
