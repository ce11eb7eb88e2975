package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/policy"
)

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
// the stored row. p should already be normalised and validated; it is
// normalised again and a failing validation is ErrInvalid. The new row must
// be inside scope (a passengers scope): a row the caller could not see is
// never created (ErrScope).
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
// ErrScope, ErrIdempotencyKeyReused and ErrUnavailable.
func (s *Store) CreatePassenger(ctx context.Context, scope policy.RowScope, owner int64, p Passenger, idem *IdempotentRequest) (created Passenger, replayed bool, err error) {
	if scope.Resource != "passengers" {
		return Passenger{}, false, fmt.Errorf("%w: scope of %q used on passengers", ErrScope, scope.Resource)
	}
	p.Normalize()
	if bad := p.Validate(); bad != nil {
		return Passenger{}, false, fmt.Errorf("%w: passenger: %s", ErrInvalid, describeFields(bad))
	}
	p.PassengerID = 0
	p.AccountID = owner
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if idem != nil {
			var claimed bool
			created, claimed, err = claimIdempotencyKey(ctx, tx, *idem)
			if err != nil || !claimed {
				replayed = err == nil
				return err
			}
		}
		created, err = NewStore(tx).insertPassenger(ctx, scope, p)
		if err != nil || idem == nil {
			return err
		}
		return storeIdempotentResponse(ctx, tx, *idem, created)
	})
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
func (s *Store) insertPassenger(ctx context.Context, scope policy.RowScope, p Passenger) (Passenger, error) {
	if _, err := s.db.NewInsert().Model(&p).Returning("*").Exec(ctx); err != nil {
		return Passenger{}, err
	}
	q, err := s.scopedSelect(scope, (*Passenger)(nil))
	if err != nil {
		return Passenger{}, err
	}
	n, err := q.Where(`"p"."passenger_id" = ?`, p.PassengerID).Count(ctx)
	if err != nil {
		return Passenger{}, err
	}
	if n != 1 {
		return Passenger{}, fmt.Errorf("%w: a passenger of account %d is outside the caller's scope", ErrScope, p.AccountID)
	}
	return p, nil
}

// claimIdempotencyKey inserts the key row, or finds the one that exists. A
// concurrent insert of the same key blocks on the primary key until the
// other transaction ends. It returns claimed true when this transaction
// owns the new row, else the passenger of the first response (same hash)
// or ErrIdempotencyKeyReused (other hash).
func claimIdempotencyKey(ctx context.Context, tx bun.Tx, idem IdempotentRequest) (Passenger, bool, error) {
	row := &IdempotencyKey{AccountID: idem.AccountID, Key: idem.Key, RequestHash: idem.RequestHash, Response: json.RawMessage("{}")}
	res, err := tx.NewInsert().Model(row).On("CONFLICT DO NOTHING").Exec(ctx)
	if err != nil {
		return Passenger{}, false, err
	}
	if n, err := res.RowsAffected(); err != nil {
		return Passenger{}, false, err
	} else if n == 1 {
		return Passenger{}, true, nil
	}
	existing := new(IdempotencyKey)
	if err := tx.NewSelect().Model(existing).
		Where(`"ik"."account_id" = ? AND "ik"."key" = ?`, idem.AccountID, idem.Key).Scan(ctx); err != nil {
		return Passenger{}, false, err
	}
	if !bytes.Equal(existing.RequestHash, idem.RequestHash) {
		return Passenger{}, false, ErrIdempotencyKeyReused
	}
	if existing.Status != http.StatusCreated {
		return Passenger{}, false, fmt.Errorf("idempotency key %q holds status %d, not a created passenger", idem.Key, existing.Status)
	}
	var p Passenger
	if err := json.Unmarshal(existing.Response, &p); err != nil {
		return Passenger{}, false, fmt.Errorf("idempotency key %q: stored response: %w", idem.Key, err)
	}
	return p, false, nil
}

// storeIdempotentResponse records the created passenger as the key's
// response.
func storeIdempotentResponse(ctx context.Context, tx bun.Tx, idem IdempotentRequest, created Passenger) error {
	body, err := json.Marshal(created)
	if err != nil {
		return err
	}
	_, err = tx.NewUpdate().Model((*IdempotencyKey)(nil)).
		Set("status = ?", http.StatusCreated).
		Set("response = ?::jsonb", string(body)).
		Where(`"ik"."account_id" = ? AND "ik"."key" = ?`, idem.AccountID, idem.Key).
		Exec(ctx)
	return err
}

// describeFields renders validation failures as "field: reason" in field
// order.
func describeFields(bad map[string]string) string {
	parts := make([]string, 0, len(bad))
	for f, reason := range bad {
		parts = append(parts, f+": "+reason)
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}
