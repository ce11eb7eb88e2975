package importfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fleetapi/fleetapi/storage"
)

// importFile is the decoded file: each section's records with their refs.
type importFile struct {
	Accounts   []record[importAccount]
	Objects    []record[importObject]
	Tokens     []record[importToken]
	Services   []record[importService]
	Reports    []record[importReport]
	Events     []record[importEvent]
	Passengers []record[importPassenger]
}

// record is one decoded record with its place in the file.
type record[T any] struct {
	ref recordRef
	val T
}

// The record types of DESIGN §8. Resource records embed their model, so
// that they accept exactly its JSON fields; the database-assigned id is
// shadowed and refused.
type (
	importAccount struct {
		Username        string        `json:"username"`
		Email           string        `json:"email"`
		Type            string        `json:"type"`
		Manager         string        `json:"manager"`
		Active          *bool         `json:"active"`
		ReadOnly        bool          `json:"read_only"`
		AccountExpire   bool          `json:"account_expire"`
		AccountExpireDt *storage.Date `json:"account_expire_dt"`
		Privileges      []string      `json:"privileges"`
		Objects         []string      `json:"objects"`
	}
	importObject struct {
		IMEI        string `json:"imei"`
		Account     string `json:"account"`
		Name        string `json:"name"`
		Odometer    int64  `json:"odometer"`
		EngineHours int64  `json:"engine_hours"`
	}
	importToken struct {
		Account     string     `json:"account"`
		Name        string     `json:"name"`
		Secret      string     `json:"secret"`
		Permissions []string   `json:"permissions"`
		ExpiresAt   *time.Time `json:"expires_at"`
		RateLimit   *int       `json:"rate_limit"`
	}
	importService struct {
		storage.Service
		Account   string             `json:"account"`
		Extra     storage.JSONObject `json:"extra"`
		ServiceID json.RawMessage    `json:"service_id"`
	}
	importReport struct {
		storage.Report
		Account  string          `json:"account"`
		ReportID json.RawMessage `json:"report_id"`
	}
	importEvent struct {
		storage.Event
		Account string          `json:"account"`
		EventID json.RawMessage `json:"event_id"`
	}
	importPassenger struct {
		storage.Passenger
		Account         string          `json:"account"`
		PassengerActive *bool           `json:"passenger_active"`
		PassengerID     json.RawMessage `json:"passenger_id"`
	}
)

// keyFields are the natural-key fields that name a record of a section.
func keyFields(section string) []string {
	switch section {
	case "accounts":
		return []string{"username"}
	case "objects":
		return []string{"imei"}
	case "services":
		return []string{"imei", "name"}
	case "passengers":
		return []string{"account", "passenger_name"}
	}
	return []string{"account", "name"}
}

// decodeImport reads the file strictly: unknown sections or fields, wrong
// types and trailing data are errors wrapping storage.ErrInvalid.
func decodeImport(r io.Reader) (*importFile, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("import: read: %w", err)
	}
	var raw struct {
		Accounts   []json.RawMessage `json:"accounts"`
		Objects    []json.RawMessage `json:"objects"`
		Tokens     []json.RawMessage `json:"tokens"`
		Services   []json.RawMessage `json:"services"`
		Reports    []json.RawMessage `json:"reports"`
		Events     []json.RawMessage `json:"events"`
		Passengers []json.RawMessage `json:"passengers"`
	}
	if err := decodeStrict(data, &raw); err != nil {
		return nil, fmt.Errorf("import: %w: %s", storage.ErrInvalid, describeJSONError(err))
	}
	f := new(importFile)
	for _, err := range []error{
		decodeSection("accounts", raw.Accounts, &f.Accounts),
		decodeSection("objects", raw.Objects, &f.Objects),
		decodeSection("tokens", raw.Tokens, &f.Tokens),
		decodeSection("services", raw.Services, &f.Services),
		decodeSection("reports", raw.Reports, &f.Reports),
		decodeSection("events", raw.Events, &f.Events),
		decodeSection("passengers", raw.Passengers, &f.Passengers),
	} {
		if err != nil {
			return nil, err
		}
	}
	return f, nil
}

func decodeSection[T any](section string, raws []json.RawMessage, out *[]record[T]) error {
	recs := make([]record[T], len(raws))
	for i, raw := range raws {
		ref := recordRef{section: section, index: i, key: recordKey(section, raw)}
		recs[i].ref = ref
		if err := decodeStrict(raw, &recs[i].val); err != nil {
			return ref.errorf("%s", describeJSONError(err))
		}
	}
	*out = recs
	return nil
}

// decodeStrict decodes one JSON value, refusing unknown fields and
// anything after the value.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

// recordKey names a record by its natural key, as far as it can be read.
func recordKey(section string, raw json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	var parts []string
	for _, f := range keyFields(section) {
		if s, ok := m[f].(string); ok {
			parts = append(parts, fmt.Sprintf("%s %q", f, s))
		}
	}
	return strings.Join(parts, ", ")
}
