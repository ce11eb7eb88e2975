package storage

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
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage/authsync"
	"github.com/fleetapi/fleetapi/tenancy"
)

// AuditEvents is the audit trail of management writes (GET /audit-events,
// docs/design.md §9). It is listed through the management scope: a row is visible
// when its target_account_id is an account the caller manages. It is not a
// tenant resource (Descriptors, Resources): no data.fleet.scope rule.
var AuditEvents = Model[AuditEvent]{scopedByAccounts[AuditEvent]("target_account_id")}

// AuditEvent is a row of audit_events: one management write.
type AuditEvent struct {
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

// auditEvent is the audit event of action on the target: the changes from
// before to after (Diff; before nil for a create).
func auditEvent(action string, targetAccountID, targetID int64, before, after map[string]any) (AuditEvent, error) {
	changes, err := Diff(before, after)
	if err != nil {
		return AuditEvent{}, err
	}
	return AuditEvent{Action: action, TargetAccountID: targetAccountID, TargetID: targetID, Changes: changes}, nil
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

// ErrSecretInAudit is returned for an audit event whose changes name a
// secret-like field, hold binary data, or hold a value that is a token
// secret or a stored token hash: the audit trail never stores one (docs/design.md
// §9). A client's value that is one is reported as a *SecretValueError.
var ErrSecretInAudit = errors.New("audit: a secret or hash in the changes")

// SecretValueError is the ErrSecretInAudit of a value the client sent
// (a name, an e-mail, ...) that holds the secret of an existing token or
// the stored hash of one: Field names the request field. The API answers
// it 400, naming the field and never the value.
type SecretValueError struct{ Field string }

func (e *SecretValueError) Error() string {
	return fmt.Sprintf("%v: field %q holds a token secret or a stored token hash", ErrSecretInAudit, e.Field)
}

// Is makes errors.Is(err, ErrSecretInAudit) true.
func (e *SecretValueError) Is(target error) bool { return target == ErrSecretInAudit }

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
			return nil, fmt.Errorf("%w: field %q", ErrSecretInAudit, field)
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
			return fmt.Errorf("%w: field %q holds binary data", ErrSecretInAudit, field)
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
				return fmt.Errorf("%w: field %q.%q", ErrSecretInAudit, field, k)
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

// auditTarget is what the events of one action are about: the table
// whose row target_id names, and the fields of changes that hold that
// row's personal data (replaced by ErasedMark when the row is erased).
type auditTarget struct {
	table    string
	personal []string
}

// auditTargets declares every audited action (writeAuditEvent refuses
// any other). The IMEIs under "imei" in any event's changes are handled
// apart: an erase replaces those of erased devices whatever the event is
// about (scrubAudit).
var auditTargets = map[string]auditTarget{
	policy.ActionAccountCreate: {"accounts", []string{"username", "email"}},
	policy.ActionAccountUpdate: {"accounts", []string{"username", "email"}},
	policy.ActionAccountErase:  {"accounts", nil},
	policy.ActionGrantsReplace: {"accounts", nil},
	policy.ActionObjectCreate:  {"objects", []string{"name", "imei"}},
	policy.ActionObjectMove:    {"objects", []string{"imei"}},
	policy.ActionTokenCreate:   {"tokens", []string{"name"}},
	policy.ActionTokenRevoke:   {"tokens", nil},
}

// writeAuditEvent stores ev inside the caller's transaction db: the one
// place an audit row is written. It refuses an event without an actor, a
// target or a known action, and changes that hold a secret or a hash
// (ErrSecretInAudit), so that nothing of the kind is ever stored.
func writeAuditEvent(ctx context.Context, db bun.IDB, ev *AuditEvent) error {
	if _, ok := auditTargets[ev.Action]; !ok {
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

// Actor is who makes a management write, as the audit row records it.
type Actor struct {
	AccountID int64
	TokenID   int64
	RequestID string
	TraceID   string
}

// ManagementWrite is one management write (docs/design.md §9): the accounts it
// acts on, which must be in the caller's management scope, and the change,
// which runs in the transaction and returns the audit event of what it
// did (action, target and changes; the actor is filled in).
type ManagementWrite struct {
	// Accounts are the ids that must be in the management scope; they are
	// locked for the transaction (FOR NO KEY UPDATE; FOR UPDATE for an
	// erase), in the lock order of every write (locks.go). One outside the
	// scope is ErrNotFound, whether it exists or not, and so is one
	// erased before the lock.
	Accounts []int64
	Actor    Actor
	// Change makes the change with tx and returns its audit event.
	Change func(ctx context.Context, tx *Store) (AuditEvent, error)
	// More, when set, runs after Change in the same transaction and
	// returns the audit events of what the change did beyond its target
	// (the heirs a token's revocation revoked), stored with the same
	// actor after Change's.
	More func(ctx context.Context, tx *Store) ([]AuditEvent, error)
	// deletes says that the write deletes Accounts (an erase): they are
	// locked FOR UPDATE.
	deletes bool
	// also are the other accounts the write locks with Accounts, in the
	// same order, without a scope check: the caller whose Idempotency-Key
	// it claims, the parent whose devices a grant names, the accounts of
	// a revoked token's heirs.
	also accountLocks
}

// locks is step 1 of w (locks.go): its accounts with their strengths.
func (w ManagementWrite) locks() accountLocks {
	l := forNoKeyUpdate
	if w.deletes {
		l = forUpdate
	}
	return w.also.with(l, w.Accounts...)
}

// ManageInTx runs w in one transaction: check its accounts against scope,
// the caller's management scope (policy.Engine.ManagementScope),
// make the change, store the audit row. Any failure rolls everything back,
// so a denied or failed write leaves no audit row, and a change is never
// stored without one. Errors are translated (Translate); ErrNotFound for
// an account outside the scope.
func (s *Store) ManageInTx(ctx context.Context, scope policy.Scope, w ManagementWrite) (AuditEvent, error) {
	if _, err := s.compiledFor(scope, accountsScope); err != nil {
		return AuditEvent{}, err
	}
	var ev AuditEvent
	err := s.writeInTx(ctx, func(ctx context.Context, tx bun.Tx) (bool, error) {
		var err error
		ev, _, err = manage(ctx, s.on(tx), tx, scope, w, nil)
		return err == nil, err
	})
	if err != nil {
		return AuditEvent{}, err
	}
	return ev, nil
}

// writeInTx runs write in one transaction and, when write reports that it
// wrote and the committed transaction changed what a principal is made of
// (principalChanged), waits until every replica's authentication cache
// has the change (awaitAuth) before it returns. Its errors are translated
// (Translate).
func (s *Store) writeInTx(ctx context.Context, write func(ctx context.Context, tx bun.Tx) (wrote bool, err error)) error {
	var changed bool
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		wrote, err := write(ctx, tx)
		if err != nil || !wrote {
			return err
		}
		changed, err = principalChanged(ctx, tx)
		return err
	})
	if err != nil {
		return Translate(err)
	}
	if changed {
		s.awaitAuth(ctx)
	}
	return nil
}

// principalChanged reports whether the transaction tx changed what a
// principal is made of: the triggers of migration 20261221000001 set
// fleet.auth_changed when they announce a change to the auth cache.
func principalChanged(ctx context.Context, tx bun.IDB) (bool, error) {
	var on bool
	err := tx.NewRaw("SELECT COALESCE(current_setting('fleet.auth_changed', true), '') = 'on'").Scan(ctx, &on)
	return on, err
}

// awaitAuth waits, after a committed change to a principal, until every
// replica's authentication cache has it or has stopped being consulted
// (authsync.AwaitAcks), whether or not the caller is still there: the change's
// answer never comes before that. Inside a caller's transaction (s.db is
// not the pool) nothing is committed yet, and the caller waits after its
// commit. The wait's trouble is logged by the caller's telemetry only:
// the change has happened, and the wait ended at its bound.
func (s *Store) awaitAuth(ctx context.Context) {
	if _, ok := s.db.(*bun.DB); !ok {
		return
	}
	res := authsync.AwaitAcks(context.WithoutCancel(ctx), s.db)
	res.Err = Translate(res.Err)
	attrs := []attribute.KeyValue{
		attribute.Int64("fleet.auth.ack.seq", res.Seq),
		attribute.Int64("fleet.auth.ack.wait_ms", res.Waited.Milliseconds()),
		attribute.Int("fleet.auth.ack.unacked", len(res.Unacked)),
	}
	if res.Err != nil {
		attrs = append(attrs, attribute.String("fleet.auth.ack.error", res.Err.Error()))
	}
	trace.SpanFromContext(ctx).AddEvent("auth.acks", trace.WithAttributes(attrs...))
}

// manage runs w inside the transaction tx (ManageInTx), whose Store is ts:
// its accounts checked against scope, then locked with the others it locks
// (step 1 of the lock order, locks.go); claim, when not nil, then claims
// the write's Idempotency-Key (step 2) and reports a replay, which ends
// the write there (replayed); then the change and the audit row. Its
// errors are untranslated; the caller's transaction rolls back on any of
// them.
func manage(ctx context.Context, ts *Store, tx bun.Tx, scope policy.Scope, w ManagementWrite, claim func() (bool, error)) (ev AuditEvent, replayed bool, err error) {
	if len(w.Accounts) > 0 {
		ids := uniqueIDs(w.Accounts)
		q, err := ts.scopedSelect(scope, accountsScope, (*Account)(nil))
		if err != nil {
			return AuditEvent{}, false, err
		}
		n, err := q.Where(accountsScope.col("id")+" = ANY(?)", pgdialect.Array(ids)).Count(ctx)
		if err != nil {
			return AuditEvent{}, false, err
		}
		if n != int64(len(ids)) {
			return AuditEvent{}, false, fmt.Errorf("%w: an account of the write is outside the management scope", ErrNotFound)
		}
	}
	if err := w.locks().lock(ctx, tx); err != nil {
		return AuditEvent{}, false, err
	}
	if claim != nil {
		if replayed, err := claim(); err != nil || replayed {
			return AuditEvent{}, replayed, err
		}
	}
	ev, err = w.Change(ctx, ts)
	if err != nil {
		return AuditEvent{}, false, err
	}
	ev.ActorAccountID, ev.ActorTokenID = w.Actor.AccountID, w.Actor.TokenID
	ev.RequestID, ev.TraceID = w.Actor.RequestID, w.Actor.TraceID
	if err := writeAuditEvent(ctx, tx, &ev); err != nil {
		return AuditEvent{}, false, err
	}
	if w.More != nil {
		more, err := w.More(ctx, ts)
		if err != nil {
			return AuditEvent{}, false, err
		}
		for i := range more {
			m := &more[i]
			m.ActorAccountID, m.ActorTokenID = w.Actor.AccountID, w.Actor.TokenID
			m.RequestID, m.TraceID = w.Actor.RequestID, w.Actor.TraceID
			if err := writeAuditEvent(ctx, tx, m); err != nil {
				return AuditEvent{}, false, err
			}
		}
	}
	return ev, false, nil
}

func uniqueIDs(ids []int64) []int64 {
	out := append([]int64(nil), ids...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	n := 0
	for i, id := range out {
		if i == 0 || id != out[n-1] {
			out[n] = id
			n++
		}
	}
	return out[:n]
}

// idempotentManage runs the management write w (scope check, locks,
// change, audit row: manage) in one transaction behind the idempotency key
// idem, nil for none. The key is claimed after the write's accounts are
// locked, the caller's among them (KEY SHARE: the key's row references
// it), so that the key's insert waits for nothing the write does not
// already hold (docs/locking.md). A key already claimed replays its stored
// response into *result and writes nothing; otherwise w's change fills
// *result, which is stored as the key's response. It reports whether the
// response was replayed, and returns the errors of manage and of the key
// (ErrIdempotencyKeyReused) passed through Translate.
func idempotentManage[T any](ctx context.Context, s *Store, scope policy.Scope, w ManagementWrite, idem *IdempotentRequest, result *T) (replayed bool, err error) {
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var claim func() (bool, error)
		if idem != nil {
			w.also = w.also.with(forKeyShare, idem.AccountID)
			claim = func() (bool, error) {
				raw, claimed, err := claimKey(ctx, tx, *idem)
				if err != nil || claimed {
					return false, err
				}
				if err := json.Unmarshal(raw, result); err != nil {
					return false, fmt.Errorf("idempotency key %q: stored response: %w", idem.Key, err)
				}
				return true, nil
			}
		}
		var err error
		if _, replayed, err = manage(ctx, s.on(tx), tx, scope, w, claim); err != nil || replayed || idem == nil {
			return err
		}
		return storeIdempotentResponse(ctx, tx, *idem, *result)
	})
	return replayed, Translate(err)
}
