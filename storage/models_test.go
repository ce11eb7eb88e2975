package storage_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
)

func TestModelsEncodeJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		value any
		want  []string // substrings of the encoding
	}{
		{"empty_report_lists_are_arrays", storage.Report{}, []string{`"imei":[]`, `"zone_ids":[]`, `"sensor_names":[]`, `"data_items":[]`, `"dt_schedule_d":null`}},
		{"empty_event_lists_and_day_time", storage.Event{}, []string{`"week_days":[]`, `"imei":[]`, `"routes":[]`, `"zones":[]`, `"day_time":{}`}},
		{"service_without_days_last", storage.Service{}, []string{`"service_id":0`, `"days_last":null`}},
		{"service_days_last_is_a_date", storage.Service{DaysLast: &storage.Date{Time: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)}}, []string{`"days_last":"2024-03-01"`}},
		{"passenger_pickup_null", storage.Passenger{}, []string{`"passenger_pickup_point_id":null`, `"passenger_active":false`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.value)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("%s does not contain %s", b, w)
				}
			}
			for _, hidden := range []string{"account_id", "extra", "created_at", "BaseModel"} {
				if strings.Contains(string(b), hidden) {
					t.Errorf("%s shows %s", b, hidden)
				}
			}
		})
	}
}

func TestDateJSON(t *testing.T) {
	t.Parallel()
	var d storage.Date
	if err := json.Unmarshal([]byte(`"2024-02-29"`), &d); err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(d); string(b) != `"2024-02-29"` {
		t.Fatalf("round trip: %s", b)
	}
	for _, bad := range []string{`"2024-02-30"`, `"29.02.2024"`, `20240229`, `"2024-02-29T00:00:00Z"`} {
		t.Run(bad, func(t *testing.T) {
			if err := json.Unmarshal([]byte(bad), &d); err == nil {
				t.Fatalf("%s decoded", bad)
			}
		})
	}
}

func TestModelsRoundTripThroughDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	importJSON(t, db, demodata.File())

	var svc storage.Service
	if err := db.NewSelect().Model(&svc).Where("name = ?", "Annual inspection").Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if svc.DaysLast == nil || svc.DaysLast.String() != "2024-03-01" || svc.Extra["inspector"] != "TÜV Nord" {
		t.Errorf("service: %+v", svc)
	}
	var rep storage.Report
	if err := db.NewSelect().Model(&rep).Where("name = ?", "Forklift utilisation").Scan(ctx); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(rep)
	for _, w := range []string{`"zone_ids":[]`, `"imei":["356938035643825"]`, `"dt_schedule_w":null`} {
		if !strings.Contains(string(b), w) {
			t.Errorf("report %s does not contain %s", b, w)
		}
	}
	var ev storage.Event
	if err := db.NewSelect().Model(&ev).Where("name = ?", "Reefer door open").Scan(ctx); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(ev)
	for _, w := range []string{`"week_days":[]`, `"day_time":{}`, `"route_trigger":"off"`, `"sms_template_id":3`} {
		if !strings.Contains(string(b), w) {
			t.Errorf("event %s does not contain %s", b, w)
		}
	}
	var acct storage.Account
	if err := db.NewSelect().Model(&acct).Where("username = ?", "soylent").Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if ta := acct.Tenancy(); !ta.Expired(time.Now()) || ta.ExpireDate.Format("2006-01-02") != "2025-01-31" {
		t.Errorf("soylent: %+v", ta)
	}
}
