package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"reflect"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage/limits"
)

// Passengers is the passengers resource: POST /passengers (docs/design.md §5).
var Passengers = declare[Passenger](counted)

// Passenger is a row of passengers (docs/design.md §5).
type Passenger struct {
	bun.BaseModel `bun:"table:passengers,alias:p"`

	PassengerID       int64  `bun:"passenger_id,pk,autoincrement" json:"passenger_id"`
	AccountID         int64  `bun:"account_id,notnull" json:"-"`
	PassengerName     string `bun:"passenger_name,notnull" json:"passenger_name"`
	PassengerAssignID string `bun:"passenger_assign_id,notnull" json:"passenger_assign_id"`
	PassengerIDN      string `bun:"passenger_idn,notnull" json:"passenger_idn"`
	PassengerAddress  string `bun:"passenger_address,notnull" json:"passenger_address"`
	PassengerPhone    string `bun:"passenger_phone,notnull" json:"passenger_phone"`
	PassengerEmail    string `bun:"passenger_email,notnull" json:"passenger_email"`
	PassengerDesc     string `bun:"passenger_desc,notnull" json:"passenger_desc"`
	PassengerClientID string `bun:"passenger_client_id,notnull" json:"passenger_client_id"`
	PassengerActive   bool   `bun:"passenger_active,notnull" json:"passenger_active"`
	// PassengerPickupPointID is ≥ 1 when set.
	PassengerPickupPointID *int64    `bun:"passenger_pickup_point_id" json:"passenger_pickup_point_id"`
	CreatedAt              time.Time `bun:"created_at,nullzero,notnull,default:current_timestamp" json:"-"`
}

// Normalize applies the stored form of docs/design.md §5: the name and assign id
// trimmed (whitespace, controls and zero-width characters at the ends),
// the assign id in Unicode NFC and upper-cased. Nothing else of what the
// client sent is changed.
func (p *Passenger) Normalize() {
	p.PassengerName = trimText(p.PassengerName)
	p.PassengerAssignID = assignIDForm(p.PassengerAssignID)
}

// Validate checks a normalised passenger against docs/design.md §5 and returns the
// failing fields (field name → reason); nil when it is valid.
func (p *Passenger) Validate() map[string]string {
	bad := map[string]string{}
	if n := utf8.RuneCountInString(p.PassengerName); n < 1 || n > 100 {
		bad["passenger_name"] = "required, 1 to 100 characters"
	} else if !visible(p.PassengerName) {
		bad["passenger_name"] = "must contain a visible character"
	}
	if utf8.RuneCountInString(p.PassengerAssignID) > 50 {
		bad["passenger_assign_id"] = "at most 50 characters"
	}
	if p.PassengerEmail != "" && !ValidEmail(p.PassengerEmail) {
		bad["passenger_email"] = "not a valid e-mail address"
	}
	if utf8.RuneCountInString(p.PassengerDesc) > 1000 {
		bad["passenger_desc"] = "at most 1000 characters"
	}
	if p.PassengerPickupPointID != nil && *p.PassengerPickupPointID < 1 {
		bad["passenger_pickup_point_id"] = "must be 1 or more"
	}
	if len(bad) == 0 {
		return nil
	}
	return bad
}

// NewPassenger is a passenger to create: a Passenger as given, which
// CreatePassenger checks (CheckPassenger), or a CheckedPassenger, which
// passed the check already and is not checked again. The rule of a stored
// passenger is storage's; whoever checks first (the api, to answer
// VALIDATION_FAILED before anything else) hands on the checked value, so
// that a request runs the rule once.
type NewPassenger interface {
	// checked is the passenger normalised and validated once.
	checked() (Passenger, error)
}

// CheckedPassenger is a passenger normalised (Normalize) and validated
// (Validate): made only by CheckPassenger.
type CheckedPassenger struct {
	p  Passenger
	ok bool
}

// CheckPassenger applies the stored form of p (Normalize) and its rules
// (Validate): the one check of a passenger to create. Its error is an
// InvalidFields (ErrInvalid) with a reason per failing field.
func CheckPassenger(p Passenger) (CheckedPassenger, error) {
	p.Normalize()
	if bad := p.Validate(); bad != nil {
		return CheckedPassenger{}, InvalidFields(bad)
	}
	return CheckedPassenger{p: p, ok: true}, nil
}

// Passenger is the checked passenger: in its stored form.
func (c CheckedPassenger) Passenger() Passenger { return c.p }

func (c CheckedPassenger) checked() (Passenger, error) {
	if !c.ok {
		return Passenger{}, errors.New("storage: a CheckedPassenger not made by CheckPassenger")
	}
	return c.p, nil
}

// checked is CheckPassenger's passenger.
func (p Passenger) checked() (Passenger, error) {
	c, err := CheckPassenger(p)
	return c.p, err
}

// ValidEmail accepts a bare address (no display name, no angle brackets).
func ValidEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s && a.Name == ""
}

// ErrIdempotencyKeyReused is returned when an Idempotency-Key is used again
// by the same account with a different request.
var ErrIdempotencyKeyReused = errors.New("idempotency key reused with another request")

// IdempotentRequest identifies a create made with an Idempotency-Key header.
type IdempotentRequest struct {
	// AccountID is the calling account (a subaccount's own id, not its
	// parent's): keys are per caller.
	AccountID int64
	Key       string
	// RequestHash is the SHA-256 of the canonical request.
	RequestHash []byte
}

// CreatePassenger stores p as a passenger of the account owner and returns
// the stored row. A Passenger is checked here (CheckPassenger: its stored
// form, and an InvalidFields when it fails); a CheckedPassenger was
// checked already and is stored as it is. The new row must
// be inside scope (a passengers scope): a row the caller could not see is
// never created (policy.ErrScope).
//
// With idem, the first successful create under (idem.AccountID, idem.Key)
// is remembered: a retry with the same request hash returns the stored
// passenger with replayed true and writes nothing; a retry with another
// hash is ErrIdempotencyKeyReused. Concurrent requests with one key wait
// for each other, so exactly one of them creates the passenger.
//
// Everything happens in one transaction: on any error nothing is written,
// the idempotency key included, so that a retry runs again. It returns
// ErrInvalid, ErrConflict (a duplicate passenger_assign_id in the account),
// policy.ErrScope, ErrIdempotencyKeyReused, ErrNotFound (the owner or the
// caller was erased meanwhile) and ErrUnavailable.
func (s *Store) CreatePassenger(ctx context.Context, scope policy.Scope, owner int64, np NewPassenger, idem *IdempotentRequest) (created Passenger, replayed bool, err error) {
	if _, err := s.compiledFor(scope, Passengers.Descriptor); err != nil {
		return Passenger{}, false, err
	}
	p, err := np.checked()
	if err != nil {
		return Passenger{}, false, err
	}
	p.PassengerID = 0
	p.AccountID = owner
	// The quota: the shared check first, the exclusive one when the
	// account is within reach of its limit (checkQuotaShared).
	for _, exclusive := range []bool{false, true} {
		err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			// Step 1 of the lock order (docs/locking.md): the owner, in the
			// strength of its quota check, and the caller whose key the
			// create claims (a subaccount: below its parent).
			check, l := s.checkQuotaShared, forShare
			if exclusive {
				check, l = s.checkQuota, forNoKeyUpdate
			}
			locks := accountLocks{}.with(l, owner)
			if idem != nil {
				locks = locks.with(forKeyShare, idem.AccountID)
			}
			if err := locks.lock(ctx, tx); err != nil {
				return err
			}
			if idem != nil {
				var claimed bool
				created, claimed, err = claimIdempotencyKey(ctx, tx, *idem)
				if err != nil || !claimed {
					replayed = err == nil
					return err
				}
			}
			if err := check(ctx, tx, owner, limits.QuotaPassengers); err != nil {
				return err
			}
			created, err = s.on(tx).insertPassenger(ctx, scope, p)
			if err != nil || idem == nil {
				return err
			}
			return storeIdempotentResponse(ctx, tx, *idem, created)
		})
		if !errors.Is(err, limits.ErrNear) {
			break
		}
	}
	if err != nil {
		// The one translation of every failure above: begin, the
		// statements, commit.
		return Passenger{}, false, Translate(err)
	}
	// The stored response does not carry the owner (it is not on the wire).
	created.AccountID = owner
	return created, replayed, nil
}

// insertPassenger inserts p and checks that the new row is inside scope. It
// runs inside the caller's transaction, which rolls back on its error, and
// returns the driver's errors untranslated (CreatePassenger translates).
func (s *Store) insertPassenger(ctx context.Context, scope policy.Scope, p Passenger) (Passenger, error) {
	if _, err := s.db.NewInsert().Model(&p).Returning("*").Exec(ctx); err != nil {
		return Passenger{}, err
	}
	q, err := s.scopedSelect(scope, Passengers.Descriptor, (*Passenger)(nil))
	if err != nil {
		return Passenger{}, err
	}
	n, err := q.Where(Passengers.col(Passengers.id.Name)+" = ?", p.PassengerID).Count(ctx)
	if err != nil {
		return Passenger{}, err
	}
	if n != 1 {
		return Passenger{}, fmt.Errorf("%w: a passenger of account %d is outside the caller's scope", policy.ErrScope, p.AccountID)
	}
	return p, nil
}

// statusCreated is the HTTP status of a created passenger, as the
// idempotency key stores it.
const statusCreated = 201

// claimIdempotencyKey inserts the key row, or finds the one that exists. A
// concurrent insert of the same key blocks on the primary key until the
// other transaction ends. It returns claimed true when this transaction
// owns the new row, else the passenger of the first response (same hash)
// or ErrIdempotencyKeyReused (other hash).
func claimIdempotencyKey(ctx context.Context, tx bun.Tx, idem IdempotentRequest) (Passenger, bool, error) {
	raw, claimed, err := claimKey(ctx, tx, idem)
	if err != nil || claimed {
		return Passenger{}, claimed, err
	}
	var p Passenger
	if err := json.Unmarshal(raw, &p); err != nil {
		return Passenger{}, false, fmt.Errorf("idempotency key %q: stored response: %w", idem.Key, err)
	}
	return p, false, nil
}

// claimKey inserts the key row, or finds the one that exists (a
// concurrent insert of the same key waits for the other transaction). It
// returns claimed true when this transaction owns the new row, else the
// stored response of the first create (same hash) or
// ErrIdempotencyKeyReused (other hash). A row older than
// IdempotencyKeyTTL is as good as absent: this transaction takes it over
// as a new claim, whatever its hash (the update waits for a concurrent
// take-over and then finds the row fresh, which is then replayed).
func claimKey(ctx context.Context, tx bun.Tx, idem IdempotentRequest) (json.RawMessage, bool, error) {
	// Three rounds suffice: a round finds no live row only when the row
	// expired, and the take-over fails only when another transaction took
	// it over (the next round finds it live) or the purge deleted it (the
	// next round inserts).
	for range 3 {
		row := &IdempotencyKey{AccountID: idem.AccountID, Key: idem.Key, RequestHash: idem.RequestHash, Response: json.RawMessage("{}")}
		res, err := tx.NewInsert().Model(row).On("CONFLICT DO NOTHING").Exec(ctx)
		if err != nil {
			return nil, false, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, false, err
		} else if n == 1 {
			return nil, true, nil
		}
		var live []IdempotencyKey
		if err := tx.NewSelect().Model(&live).
			Where(`"ik"."account_id" = ? AND "ik"."key" = ?`, idem.AccountID, idem.Key).
			Where(`"ik"."created_at" > now() - ? * interval '1 microsecond'`, IdempotencyKeyTTL.Microseconds()).Scan(ctx); err != nil {
			return nil, false, err
		}
		if len(live) == 0 {
			res, err := tx.NewUpdate().Model((*IdempotencyKey)(nil)).
				Set("request_hash = ?, status = 0, response = '{}', subject = NULL, subject_id = NULL, created_at = now()", idem.RequestHash).
				Where(`"ik"."account_id" = ? AND "ik"."key" = ?`, idem.AccountID, idem.Key).
				Where(`"ik"."created_at" <= now() - ? * interval '1 microsecond'`, IdempotencyKeyTTL.Microseconds()).Exec(ctx)
			if err != nil {
				return nil, false, err
			}
			if n, err := res.RowsAffected(); err != nil {
				return nil, false, err
			} else if n == 1 {
				return nil, true, nil
			}
			continue
		}
		existing := live[0]
		if !bytes.Equal(existing.RequestHash, idem.RequestHash) {
			return nil, false, ErrIdempotencyKeyReused
		}
		if existing.Status != statusCreated {
			return nil, false, fmt.Errorf("idempotency key %q holds status %d, not a created row", idem.Key, existing.Status)
		}
		return existing.Response, false, nil
	}
	return nil, false, fmt.Errorf("%w: idempotency key %q changed three times during the request", ErrUnavailable, idem.Key)
}

// storeIdempotentResponse records the created row (its JSON form) as the
// key's response, with the row it names (responseSubject).
func storeIdempotentResponse(ctx context.Context, tx bun.Tx, idem IdempotentRequest, created any) error {
	subject, id, err := responseSubject(tx, created)
	if err != nil {
		return err
	}
	body, err := json.Marshal(created)
	if err != nil {
		return err
	}
	_, err = tx.NewUpdate().Model((*IdempotencyKey)(nil)).
		Set("status = ?", statusCreated).
		Set("response = ?::jsonb", string(body)).
		Set("subject = ?, subject_id = ?", subject, id).
		Where(`"ik"."account_id" = ? AND "ik"."key" = ?`, idem.AccountID, idem.Key).
		Exec(ctx)
	return err
}

// responseSubject names the row a stored response holds: the table of
// created's bun model and the value of its one-column primary key (an
// account, a device, a token, a passenger). A response of another kind is
// refused, so that a new keyed create cannot store a response the erase
// would not find.
func responseSubject(db bun.IDB, created any) (string, int64, error) {
	v := reflect.Indirect(reflect.ValueOf(created))
	if v.Kind() != reflect.Struct {
		return "", 0, fmt.Errorf("idempotency: a response of type %T names no row", created)
	}
	t := db.Dialect().Tables().Get(v.Type())
	if t == nil || len(t.PKs) != 1 || t.PKs[0].IndirectType.Kind() != reflect.Int64 {
		return "", 0, fmt.Errorf("idempotency: a response of type %T names no row by a bigint key", created)
	}
	return t.Name, t.PKs[0].Value(v).Int(), nil
}
