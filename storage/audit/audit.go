package audit

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/tenancy"
)

// Event is a row of audit_events: one management write.
type Event struct {
	bun.BaseModel `bun:"table:audit_events,alias:ae"`

	ID             int64     `bun:"id,pk,autoincrement" json:"id"`
	At             time.Time `bun:"at,nullzero,notnull,default:current_timestamp" json:"at" list:"sort"`
	ActorAccountID int64     `bun:"actor_account_id,notnull" json:"actor_account_id" list:"filter"`
	ActorTokenID   int64     `bun:"actor_token_id,notnull" json:"actor_token_id"`
	// Action is one of the policy.Action constants.
	Action          string `bun:"action,notnull" json:"action" list:"filter"`
	TargetAccountID int64  `bun:"target_account_id,notnull" json:"target_account_id" list:"filter"`
	TargetID        int64  `bun:"target_id,notnull" json:"target_id"`
	// Changes holds exactly the fields that changed.
	Changes   Changes `bun:"changes,type:jsonb,notnull" json:"changes"`
	RequestID string  `bun:"request_id,notnull" json:"request_id"`
	TraceID   string  `bun:"trace_id,notnull" json:"trace_id"`
}

// Change is the before and after value of one field (before nil on a
// create).
type Change struct {
	Before any `json:"before"`
	After  any `json:"after"`
}

// Changes maps a field name to its change: {"field": {"before": x,
// "after": y}}. It encodes as {} when empty, never null.
type Changes map[string]Change

// MarshalJSON encodes the changes, nil as {}.
func (c Changes) MarshalJSON() ([]byte, error) {
	if c == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(map[string]Change(c))
}

// New is the audit event of action on the target: the changes from
// before to after (Diff; before nil for a create).
func New(action string, targetAccountID, targetID int64, before, after map[string]any) (Event, error) {
	changes, err := Diff(before, after)
	if err != nil {
		return Event{}, err
	}
	return Event{Action: action, TargetAccountID: targetAccountID, TargetID: targetID, Changes: changes}, nil
}

// Diff returns the changes from before to after: the fields whose values
// differ (compared as their JSON encodings), with before nil for a field
// absent from before (a create passes a nil before).
func Diff(before, after map[string]any) (Changes, error) {
	out := Changes{}
	for field, a := range after {
		b, had := before[field]
		if had {
			same, err := sameJSON(b, a)
			if err != nil {
				return nil, fmt.Errorf("audit: field %s: %w", field, err)
			}
			if same {
				continue
			}
		}
		out[field] = Change{Before: b, After: a}
	}
	return out, nil
}

// sameJSON reports whether a and b have the same JSON encoding.
func sameJSON(a, b any) (bool, error) {
	ja, err := json.Marshal(a)
	if err != nil {
		return false, err
	}
	jb, err := json.Marshal(b)
	if err != nil {
		return false, err
	}
	return bytes.Equal(ja, jb), nil
}

// ErrSecret is returned for an audit event whose changes name a
// secret-like field, hold binary data, or hold a value that is a token
// secret or a stored token hash: the audit trail never stores one (docs/design.md
// §9). A client's value that is one is reported as a *SecretValueError.
var ErrSecret = errors.New("audit: a secret or hash in the changes")

// SecretValueError is the ErrSecret of a value the client sent
// (a name, an e-mail, ...) that holds the secret of an existing token or
// the stored hash of one: Field names the request field. The API answers
// it 400, naming the field and never the value.
type SecretValueError struct{ Field string }

func (e *SecretValueError) Error() string {
	return fmt.Sprintf("%v: field %q holds a token secret or a stored token hash", ErrSecret, e.Field)
}

// Is makes errors.Is(err, ErrSecret) true.
func (e *SecretValueError) Is(target error) bool { return target == ErrSecret }

// secretField matches the names of fields that hold secrets or hashes.
var secretField = regexp.MustCompile(`(?i)secret|hash|password|passwd|credential|private|api_?key`)

// hexHash matches the hex form of a SHA-256 digest (a token hash as
// PostgreSQL prints bytea, with or without \x); the base64 forms are
// decoded by base64Hash.
var hexHash = regexp.MustCompile(`(?i)^(?:\\x)?[0-9a-f]{64}$`)

// checkNoSecrets refuses changes that name a secret-like field or hold
// binary data at any depth (both are the server's own mistakes), and
// collects every candidate token hash the string values hold (secretValue):
// the caller then checks them against the tokens table, so that only what
// actually is a token secret or a stored hash is refused, and a username
// that is a dash-less UUID, a 40-hex device serial or an e-mail holding
// "flt_" are stored as they are (issue 19 item 8).
func checkNoSecrets(c Changes) (candidates map[string][][]byte, err error) {
	candidates = map[string][][]byte{}
	for field, ch := range c {
		if secretField.MatchString(field) {
			return nil, fmt.Errorf("%w: field %q", ErrSecret, field)
		}
		for _, v := range []any{ch.Before, ch.After} {
			if err := secretValue(field, reflect.ValueOf(v), 0, candidates); err != nil {
				return nil, err
			}
		}
	}
	return candidates, nil
}

// secretValue walks v, refuses binary values and adds the candidate hashes
// of its strings (tokenCandidates) to candidates[field].
func secretValue(field string, v reflect.Value, depth int, candidates map[string][][]byte) error {
	if depth > 16 {
		return fmt.Errorf("audit: field %q: value nested deeper than 16", field)
	}
	for v.IsValid() && (v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer) {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		candidates[field] = append(candidates[field], tokenCandidates(v.String())...)
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return fmt.Errorf("%w: field %q holds binary data", ErrSecret, field)
		}
		for i := range v.Len() {
			if err := secretValue(field, v.Index(i), depth+1, candidates); err != nil {
				return err
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			k := fmt.Sprint(iter.Key().Interface())
			if secretField.MatchString(k) {
				return fmt.Errorf("%w: field %q.%q", ErrSecret, field, k)
			}
			if err := secretValue(field, iter.Value(), depth+1, candidates); err != nil {
				return err
			}
		}
	case reflect.Struct:
		if _, ok := v.Interface().(time.Time); ok {
			return nil
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				if err := secretValue(field, v.Field(i), depth+1, candidates); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// tokenCandidates returns the token hashes s could reveal: the hash of
// every token-format secret in it (docs/design.md §3: "flt_" and 32 base62
// characters, anywhere in the text), and s itself decoded when, whole, it
// has the form of a SHA-256 digest (64 hex digits, or 32 bytes in base64,
// padded or not, standard or URL alphabet). A value that has none of these
// forms cannot be a token secret or a stored hash.
func tokenCandidates(s string) [][]byte {
	var out [][]byte
	for i := 0; ; {
		j := strings.Index(s[i:], tenancy.TokenPrefix)
		if j < 0 {
			break
		}
		start := i + j
		if end := start + len(tenancy.TokenPrefix) + 32; end <= len(s) && tenancy.ValidTokenFormat(s[start:end]) {
			h, _ := tenancy.HashToken(s[start:end])
			out = append(out, h[:])
		}
		i = start + 1
	}
	t := strings.TrimSpace(s)
	if hexHash.MatchString(t) {
		if b, err := hex.DecodeString(strings.TrimPrefix(strings.TrimPrefix(t, `\x`), `\X`)); err == nil {
			out = append(out, b)
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(t); err == nil && len(b) == 32 {
			out = append(out, b)
		}
	}
	return out
}

// storedSecrets returns the fields among candidates (checkNoSecrets) one of
// whose hashes is the hash of a token in db, sorted: the values that are a
// token's secret or its stored hash.
func storedSecrets(ctx context.Context, db bun.IDB, candidates map[string][][]byte) ([]string, error) {
	var fields []string
	for field, hashes := range candidates {
		if len(hashes) == 0 {
			continue
		}
		var found bool
		if err := db.NewRaw("SELECT EXISTS (SELECT 1 FROM tokens WHERE hash = ANY(?))", pgdialect.Array(hashes)).
			Scan(ctx, &found); err != nil {
			return nil, err
		}
		if found {
			fields = append(fields, field)
		}
	}
	sort.Strings(fields)
	return fields, nil
}

// The actions of the writes of what a fleet configures (docs/design.md
// §15): event rules, service records and reports. Unlike the management
// actions (policy.Action*) they are not decided by data.fleet.manage: the
// route decision and the caller's row scope govern them. Each is audited
// like a management write.
const (
	ActionEventCreate   = "event.create"
	ActionEventUpdate   = "event.update"
	ActionEventDelete   = "event.delete"
	ActionServiceCreate = "service.create"
	ActionServiceUpdate = "service.update"
	ActionServiceDelete = "service.delete"
	ActionServiceDone   = "service.done"
	ActionReportCreate  = "report.create"
	ActionReportUpdate  = "report.update"
	ActionReportDelete  = "report.delete"
)

// ConfigActions are the actions of ActionEventCreate's group, in a
// documented order.
var ConfigActions = []string{ActionEventCreate, ActionEventUpdate, ActionEventDelete,
	ActionServiceCreate, ActionServiceUpdate, ActionServiceDelete, ActionServiceDone,
	ActionReportCreate, ActionReportUpdate, ActionReportDelete}

// Target is what the events of one action are about: the table
// whose row target_id names, and the fields of changes that hold that
// row's personal data (replaced by ErasedMark when the row is erased).
type Target struct {
	Table    string
	Personal []string
}

// Targets declares every audited action (Write refuses
// any other). The IMEIs under "imei" in any event's changes are handled
// apart: an erase replaces those of erased devices whatever the event is
// about (storage's scrubAudit).
var Targets = map[string]Target{
	policy.ActionAccountCreate: {"accounts", []string{"username", "email"}},
	policy.ActionAccountUpdate: {"accounts", []string{"username", "email"}},
	policy.ActionAccountErase:  {"accounts", nil},
	policy.ActionGrantsReplace: {"accounts", nil},
	policy.ActionObjectCreate:  {"objects", []string{"name", "imei"}},
	policy.ActionObjectMove:    {"objects", []string{"imei"}},
	policy.ActionTokenCreate:   {"tokens", []string{"name"}},
	policy.ActionTokenRevoke:   {"tokens", nil},
	policy.ActionWebhookCreate: {"webhooks", []string{"url", "description"}},
	policy.ActionWebhookUpdate: {"webhooks", []string{"url", "description"}},
	policy.ActionWebhookDelete: {"webhooks", []string{"url", "description"}},
	policy.ActionWebhookRotate: {"webhooks", nil},
	policy.ActionWebhookTest:   {"webhooks", nil},
	policy.ActionWebhookRetry:  {"webhooks", nil},
	policy.ActionZoneCreate:    {"zones", []string{"name"}},
	policy.ActionZoneUpdate:    {"zones", []string{"name"}},
	policy.ActionZoneDelete:    {"zones", []string{"name"}},
	ActionEventCreate:          {"events", eventPersonal},
	ActionEventUpdate:          {"events", eventPersonal},
	ActionEventDelete:          {"events", eventPersonal},
	ActionServiceCreate:        {"services", nil},
	ActionServiceUpdate:        {"services", nil},
	ActionServiceDelete:        {"services", nil},
	ActionServiceDone:          {"services", nil},
	ActionReportCreate:         {"reports", reportPersonal},
	ActionReportUpdate:         {"reports", reportPersonal},
	ActionReportDelete:         {"reports", reportPersonal},
}

// eventPersonal and reportPersonal are the fields of an event rule and a
// report that reach a person (addresses and numbers), erased with the
// row's account.
var (
	eventPersonal  = []string{"notify_email_address", "notify_sms_number"}
	reportPersonal = []string{"schedule_email_address"}
)

// Write stores ev inside the caller's transaction db: the one
// place an audit row is written. It refuses an event without an actor, a
// target or a known action, and changes that hold a secret or a hash
// (ErrSecret), so that nothing of the kind is ever stored.
func Write(ctx context.Context, db bun.IDB, ev *Event) error {
	if _, ok := Targets[ev.Action]; !ok {
		return fmt.Errorf("audit: unknown action %q", ev.Action)
	}
	// The operator's erase through the command line has no account or
	// token of its own: actor 0, with the command's request id.
	operator := ev.Action == policy.ActionAccountErase && ev.RequestID == OperatorRequestID &&
		ev.ActorAccountID == 0 && ev.ActorTokenID == 0
	if !operator && ev.ActorAccountID <= 0 || ev.TargetAccountID <= 0 || ev.TargetID <= 0 {
		return fmt.Errorf("audit: %s without actor or target (actor %d, target account %d, target %d)",
			ev.Action, ev.ActorAccountID, ev.TargetAccountID, ev.TargetID)
	}
	candidates, err := checkNoSecrets(ev.Changes)
	if err != nil {
		return err
	}
	fields, err := storedSecrets(ctx, db, candidates)
	if err != nil {
		return err
	}
	if len(fields) > 0 {
		return &SecretValueError{Field: fields[0]}
	}
	if ev.Changes == nil {
		ev.Changes = Changes{}
	}
	ev.ID = 0
	_, err = db.NewInsert().Model(ev).Returning("*").Exec(ctx)
	return err
}

// OperatorRequestID is the request id of the audit events the command
// line writes (fleetapi tenant erase): their actor is the operator,
// account and token 0.
const OperatorRequestID = "fleetapi tenant erase"
