package importfile_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/importfile"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

func TestLoadDemoData(t *testing.T) {
	t.Parallel()
	s, db := newStore(t)
	res := importJSON(t, db, demodata.File())
	want, wantSkip := importfile.Result{}, importfile.Result{}
	for name, n := range sectionSizes(t, demoDoc(t)) {
		want[name] = importfile.Count{Inserted: n}
		wantSkip[name] = importfile.Count{Skipped: n}
	}
	if !maps.Equal(res, want) {
		t.Fatalf("first import:\n got %v\nwant %v", res, want)
	}
	before := rowCounts(t, db)

	t.Run("reimport_adds_nothing", func(t *testing.T) {
		res := importJSON(t, db, demodata.File())
		if !maps.Equal(res, wantSkip) {
			t.Fatalf("re-import:\n got %v\nwant %v", res, wantSkip)
		}
		if after := rowCounts(t, db); !reflect.DeepEqual(after, before) {
			t.Fatalf("row counts changed: before %v, after %v", before, after)
		}
	})

	t.Run("managers_resolved_whatever_the_order", func(t *testing.T) {
		for user, manager := range map[string]string{"acme-night": "acme", "tailspin": "northwind", "acme": "fleetco"} {
			u, err := s.AccountByUsername(context.Background(), user)
			if err != nil {
				t.Fatal(err)
			}
			m, err := s.AccountByUsername(context.Background(), manager)
			if err != nil {
				t.Fatal(err)
			}
			if u.ManagerID != m.ID {
				t.Errorf("%s: manager_id %d, want %s (%d)", user, u.ManagerID, manager, m.ID)
			}
		}
	})

	t.Run("partial_overlap_counts", func(t *testing.T) {
		file := `{"services": [
			{"account": "acme", "imei": "356938035643809", "name": "Oil change"},
			{"account": "acme", "imei": "356938035643809", "name": "Coolant flush", "odo": true, "odo_interval": 40000}]}`
		res := importJSON(t, db, []byte(file))
		if res["services"] != (importfile.Count{Inserted: 1, Skipped: 1}) {
			t.Fatalf("services: %+v, want 1 inserted, 1 skipped", res["services"])
		}
	})
}

func TestLoadDefaultsAndNormalisation(t *testing.T) {
	t.Parallel()
	s, db := newStore(t)
	ctx := context.Background()
	importJSON(t, db, []byte(`{
		"passengers": [{"account": "uu", "passenger_name": "  Zoe  ", "passenger_assign_id": " ab-1 "}],
		"events": [{"account": "uu", "name": "e", "imei": ["111"]}],
		"reports": [{"account": "uu", "name": "r"}],
		"services": [{"account": "uu", "imei": "111", "name": "s"}],
		"objects": [{"imei": "111", "account": "uu"}],
		"accounts": [{"username": "uu", "type": "user"}]
	}`))

	a, err := s.AccountByUsername(ctx, "uu")
	if err != nil {
		t.Fatal(err)
	}
	if !a.Active || a.ReadOnly || a.AccountExpire || a.ManagerID != 0 || len(a.Privileges) != 0 || a.Privileges == nil {
		t.Errorf("account defaults: %+v", a)
	}
	var p storage.Passenger
	if err := db.NewSelect().Model(&p).Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if p.PassengerName != "Zoe" || p.PassengerAssignID != "AB-1" || !p.PassengerActive || p.PassengerPickupPointID != nil {
		t.Errorf("passenger: %+v", p)
	}
	var e storage.Event
	if err := db.NewSelect().Model(&e).Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if e.RouteTrigger != "off" || e.ZoneTrigger != "off" || e.CmdGateway != "gprs" || e.CmdType != "ascii" || e.DayTime == nil || e.WeekDays == nil {
		t.Errorf("event defaults: %+v", e)
	}
	var sv storage.Service
	if err := db.NewSelect().Model(&sv).Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if sv.DaysLast != nil || sv.Extra == nil || sv.Odo {
		t.Errorf("service defaults: %+v", sv)
	}
}

func TestLoadInvalidChangesNothing(t *testing.T) {
	t.Parallel()
	db := storagetest.New(t)
	empty := rowCounts(t, db)

	tests := []struct {
		name    string
		modify  func(t *testing.T, doc map[string]any)
		section string // of the *RecordError; "" when the file as a whole is wrong
		index   int
		wantMsg string
		also    error
	}{
		{"last_record_of_last_section", func(t *testing.T, doc map[string]any) {
			record(t, doc, "passengers", 5)["passenger_name"] = "   "
		}, "passengers", 5, `passengers[5] (account "tailspin", passenger_name "   "): passenger_name: required`, nil},
		{"service_unknown_imei", func(t *testing.T, doc map[string]any) {
			record(t, doc, "services", 3)["imei"] = "x"
		}, "services", 3, `import: services[3] (imei "x", name "Brake check"): unknown imei "x"`, nil},
		{"service_imei_of_another_account", func(t *testing.T, doc map[string]any) {
			record(t, doc, "services", 0)["account"] = "globex"
		}, "services", 0, `belongs to another account than "globex"`, nil},
		{"event_bad_enum", func(t *testing.T, doc map[string]any) {
			record(t, doc, "events", 1)["route_trigger"] = "sideways"
		}, "events", 1, `route_trigger "sideways"`, nil},
		{"event_bad_week_day", func(t *testing.T, doc map[string]any) {
			record(t, doc, "events", 0)["week_days"] = []any{"mon", "funday"}
		}, "events", 0, `"funday"`, nil},
		{"object_bad_type", func(t *testing.T, doc map[string]any) {
			record(t, doc, "objects", 0)["odometer"] = "lots"
		}, "objects", 0, `objects[0] (imei "356938035643809"): field "odometer": got string, want an integer`, nil},
		{"service_bad_type_in_embedded_model", func(t *testing.T, doc map[string]any) {
			record(t, doc, "services", 1)["odo"] = "yes"
		}, "services", 1, `field "odo": got string, want true or false`, nil},
		{"service_bad_date", func(t *testing.T, doc map[string]any) {
			record(t, doc, "services", 2)["days_last"] = "01/03/2024"
		}, "services", 2, `YYYY-MM-DD`, nil},
		// an object record names its device by imei and its owner by
		// username: the database id and the owner's id of the API's wire
		// form (GET /objects) are not fields of an import record
		{"object_with_id", func(t *testing.T, doc map[string]any) {
			record(t, doc, "objects", 1)["id"] = 5
		}, "objects", 1, `unknown field "id"`, nil},
		{"object_with_account_id", func(t *testing.T, doc map[string]any) {
			record(t, doc, "objects", 1)["account_id"] = 1
		}, "objects", 1, `unknown field "account_id"`, nil},
		{"object_fractional_number", func(t *testing.T, doc map[string]any) {
			record(t, doc, "objects", 2)["engine_hours"] = 1.5
		}, "objects", 2, `objects[2]`, nil},
		{"subaccount_without_manager", func(t *testing.T, doc map[string]any) {
			delete(record(t, doc, "accounts", 1), "manager")
		}, "accounts", 1, `a subaccount needs a manager`, nil},
		{"privilege_outside_list", func(t *testing.T, doc map[string]any) {
			record(t, doc, "accounts", 1)["privileges"] = []any{"billing"}
		}, "accounts", 1, `privilege "billing"`, nil},
		{"grant_outside_parent", func(t *testing.T, doc map[string]any) {
			record(t, doc, "accounts", 1)["objects"] = []any{"861073032104551"}
		}, "accounts", 1, `imei "861073032104551" does not belong to parent "acme"`, nil},
		{"unknown_manager", func(t *testing.T, doc map[string]any) {
			record(t, doc, "accounts", 3)["manager"] = "nobody"
		}, "accounts", 3, `unknown manager "nobody"`, nil},
		{"username_case_variant", func(t *testing.T, doc map[string]any) {
			doc["accounts"] = append(doc["accounts"].([]any), map[string]any{"username": "FleetCo", "type": "manager"})
		}, "accounts", 12, `username "FleetCo": the account "fleetco" exists; usernames are unique whatever the case`, nil},
		{"username_trailing_dot", func(t *testing.T, doc map[string]any) {
			doc["accounts"] = append(doc["accounts"].([]any), map[string]any{"username": "acme.", "type": "user"})
		}, "accounts", 12, `username "acme.": want 2 to 64 letters`, nil},
		{"manager_cycle", func(t *testing.T, doc map[string]any) {
			record(t, doc, "accounts", 2)["manager"] = "northwind"
			record(t, doc, "accounts", 9)["manager"] = "fleetco"
		}, "accounts", 2, `manager cycle`, nil},
		{"manager_under_a_manager", func(t *testing.T, doc map[string]any) {
			record(t, doc, "accounts", 9)["manager"] = "fleetco" // northwind, a manager, under the manager fleetco
		}, "accounts", 9, `manager "fleetco" is a manager, which cannot manage a manager`, nil},
		{"wrong_manager_type", func(t *testing.T, doc map[string]any) {
			record(t, doc, "accounts", 4)["manager"] = "acme"
		}, "accounts", 4, `manager "acme" is a user`, nil},
		{"bad_account_type", func(t *testing.T, doc map[string]any) {
			record(t, doc, "accounts", 0)["type"] = "superuser"
		}, "accounts", 0, `type "superuser"`, nil},
		{"account_rate_limit_zero", func(t *testing.T, doc map[string]any) {
			record(t, doc, "accounts", 3)["rate_limit"] = 0
		}, "accounts", 3, `rate_limit must be 1 or more`, nil},
		{"account_negative_quota", func(t *testing.T, doc map[string]any) {
			record(t, doc, "accounts", 3)["quotas"] = map[string]any{"devices": -1}
		}, "accounts", 3, `quotas.devices must be 0 or more`, nil},
		{"account_unknown_quota", func(t *testing.T, doc map[string]any) {
			record(t, doc, "accounts", 3)["quotas"] = map[string]any{"vehicles": 5}
		}, "accounts", 3, `unknown field "vehicles"`, nil},
		{"admin_with_quotas", func(t *testing.T, doc map[string]any) {
			record(t, doc, "accounts", 0)["quotas"] = map[string]any{"devices": 5}
		}, "accounts", 0, `an admin has no quotas`, nil},
		{"token_secret_and_hash", func(t *testing.T, doc map[string]any) {
			record(t, doc, "tokens", 2)["secret_hash"] = strings.Repeat("ab", 32)
		}, "tokens", 2, `the secret or its secret_hash, not both`, nil},
		{"token_short_hash", func(t *testing.T, doc map[string]any) {
			delete(record(t, doc, "tokens", 2), "secret")
			record(t, doc, "tokens", 2)["secret_hash"] = strings.Repeat("ab", 31)
		}, "tokens", 2, `secret_hash: want the 64 hex digits`, nil},
		{"token_unknown_parent", func(t *testing.T, doc map[string]any) {
			record(t, doc, "tokens", 2)["parent"] = map[string]any{"account": "acme", "name": "later"}
		}, "tokens", 2, `unknown parent token "later" of acme: a parent comes before the tokens it minted`, nil},
		{"token_live_heir_of_revoked_parent", func(t *testing.T, doc map[string]any) {
			record(t, doc, "tokens", 2)["revoked_at"] = "2026-01-01T00:00:00Z"
			record(t, doc, "tokens", 3)["parent"] = map[string]any{"account": "acme", "name": "acme-all"}
		}, "tokens", 3, `revoked`, nil},
		{"token_bad_secret", func(t *testing.T, doc map[string]any) {
			record(t, doc, "tokens", 2)["secret"] = "flt_short"
		}, "tokens", 2, `tokens[2] (account "acme", name "acme-all"): secret`, nil},
		{"token_bad_permission", func(t *testing.T, doc map[string]any) {
			record(t, doc, "tokens", 12)["permissions"] = []any{"FETCH /services"}
		}, "tokens", 12, `FETCH /services`, nil},
		{"token_permission_misspelt_route", func(t *testing.T, doc map[string]any) {
			record(t, doc, "tokens", 12)["permissions"] = []any{"GET /services", "GET /servics"}
		}, "tokens", 12, `permission "GET /servics" matches no route of the API`, nil},
		{"token_permission_method_the_route_lacks", func(t *testing.T, doc map[string]any) {
			record(t, doc, "tokens", 3)["permissions"] = []any{"PUT /services"}
		}, "tokens", 3, `permission "PUT /services" matches no route of the API`, nil},
		{"token_permission_raw_path", func(t *testing.T, doc map[string]any) {
			record(t, doc, "tokens", 0)["permissions"] = []any{"GET /events/12"}
		}, "tokens", 0, `permission "GET /events/12" matches no route of the API: permissions name route templates; did you mean "GET /events/{id}"?`, nil},
		{"token_permission_twice", func(t *testing.T, doc map[string]any) {
			record(t, doc, "tokens", 12)["permissions"] = []any{"GET /services", "GET *", "GET /services"}
		}, "tokens", 12, `permission "GET /services" is listed twice`, nil},
		{"token_too_many_permissions", func(t *testing.T, doc map[string]any) {
			perms := make([]any, 65)
			for i := range perms {
				perms[i] = "GET *"
			}
			record(t, doc, "tokens", 12)["permissions"] = perms
		}, "tokens", 12, `65 permissions: a token holds at most 64`, nil},
		{"token_secret_of_another_token", func(t *testing.T, doc map[string]any) {
			record(t, doc, "tokens", 5)["secret"] = record(t, doc, "tokens", 1)["secret"]
		}, "tokens", 5, `secret is already the secret of token "fleetco-all" of fleetco`, nil},
		{"token_unknown_account", func(t *testing.T, doc map[string]any) {
			record(t, doc, "tokens", 0)["account"] = "ghost"
		}, "tokens", 0, `unknown account "ghost"`, nil},
		{"report_unknown_field", func(t *testing.T, doc map[string]any) {
			record(t, doc, "reports", 0)["colour"] = "red"
		}, "reports", 0, `unknown field "colour"`, nil},
		{"report_foreign_device", func(t *testing.T, doc map[string]any) {
			record(t, doc, "reports", 3)["imei"] = []any{"356938035643809"}
		}, "reports", 3, `not a device of account "globex"`, nil},
		{"report_bad_schedule", func(t *testing.T, doc map[string]any) {
			record(t, doc, "reports", 2)["schedule_period"] = "monthly"
		}, "reports", 2, `schedule_period "monthly"`, nil},
		{"report_with_id", func(t *testing.T, doc map[string]any) {
			record(t, doc, "reports", 1)["report_id"] = 7
		}, "reports", 1, `report_id is assigned by the database`, nil},
		{"record_owned_by_subaccount", func(t *testing.T, doc map[string]any) {
			record(t, doc, "passengers", 0)["account"] = "acme-night"
		}, "passengers", 0, `is a subaccount`, nil},
		{"passenger_duplicate_assign_id", func(t *testing.T, doc map[string]any) {
			record(t, doc, "passengers", 1)["passenger_assign_id"] = " ab-1001"
		}, "passengers", 1, `passengers[1] (account "acme", passenger_name "Ben Okafor"): passenger_assign_id "AB-1001" is already taken by another record of the account`, storage.ErrConflict},
		{"negative_interval_from_database_check", func(t *testing.T, doc map[string]any) {
			record(t, doc, "services", 13)["engh_interval"] = -5
		}, "services", 13, `services[13] (imei "865231041152328", name "Boom inspection"): engh_interval is out of range`, nil},
		{"unknown_section", func(t *testing.T, doc map[string]any) {
			doc["vehicles"] = []any{}
		}, "", 0, `unknown field "vehicles"`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := demoDoc(t)
			tc.modify(t, doc)
			_, err := importfile.Load(context.Background(), db.DB, bytes.NewReader(mustJSON(t, doc)))
			checkLoadError(t, err, tc.section, tc.index, tc.wantMsg, tc.also)
			if got := rowCounts(t, db); !reflect.DeepEqual(got, empty) {
				t.Fatalf("a failed import changed the database: %v", got)
			}
		})
	}

	t.Run("not_json", func(t *testing.T) {
		_, err := importfile.Load(context.Background(), db.DB, strings.NewReader(`{"accounts": [`))
		checkLoadError(t, err, "", 0, "import:", nil)
	})
	t.Run("trailing_data", func(t *testing.T) {
		_, err := importfile.Load(context.Background(), db.DB, strings.NewReader(`{} {}`))
		checkLoadError(t, err, "", 0, "import:", nil)
	})

	t.Run("on_top_of_existing_data", func(t *testing.T) {
		importJSON(t, db, demodata.File())
		before := rowCounts(t, db)
		doc := demoDoc(t)
		doc["passengers"] = append(doc["passengers"].([]any), map[string]any{"account": "acme", "passenger_name": "New"}, map[string]any{"account": "acme", "passenger_name": ""})
		_, err := importfile.Load(context.Background(), db.DB, bytes.NewReader(mustJSON(t, doc)))
		checkLoadError(t, err, "passengers", 7, `passengers[7]`, nil)
		if got := rowCounts(t, db); !reflect.DeepEqual(got, before) {
			t.Fatalf("a failed import changed the database: before %v, after %v", before, got)
		}
	})
}

// checkLoadError checks that err wraps ErrInvalid (and also, when set),
// names the record, and contains wantMsg.
func checkLoadError(t *testing.T, err error, section string, index int, wantMsg string, also error) {
	t.Helper()
	if err == nil {
		t.Fatal("import succeeded, want an error")
	}
	t.Logf("error: %v", err)
	if !errors.Is(err, storage.ErrInvalid) {
		t.Errorf("error %q does not wrap ErrInvalid", err)
	}
	if also != nil && !errors.Is(err, also) {
		t.Errorf("error %q does not wrap %v", err, also)
	}
	// The operator reads it: no driver words (docs/design.md §7).
	for _, driver := range []string{"sql:", "constraint", "duplicate key", "violates", "SQLSTATE", "pq:", "ERROR #"} {
		if strings.Contains(err.Error(), driver) {
			t.Errorf("error %q speaks the driver's language (%q)", err, driver)
		}
	}
	if !strings.Contains(err.Error(), wantMsg) {
		t.Errorf("error %q does not contain %q", err, wantMsg)
	}
	var ie *importfile.RecordError
	if section == "" {
		if errors.As(err, &ie) {
			t.Errorf("error %q names a record, want a file error", err)
		}
		return
	}
	if !errors.As(err, &ie) {
		t.Fatalf("error %q is not an *RecordError", err)
	}
	if ie.Section != section || ie.Index != index {
		t.Errorf("error names %s[%d], want %s[%d]", ie.Section, ie.Index, section, index)
	}
}
