// Package importfile loads a tenant data file (docs/design.md §8: accounts,
// devices, grants, tokens, services, reports, event rules, passengers)
// into the database, for `fleetapi import` and `fleetapi dev`. It is a
// trusted whole-table job, never used on the request path: it reads and
// writes the tenant tables through a raw database handle, without a policy
// scope, using storage's bun models, sentinels and normalisation.
package importfile

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage"
)

// Count is what an import did with the records of one section.
type Count struct {
	// Inserted records were new.
	Inserted int `json:"inserted"`
	// Skipped records matched an existing row on their natural key and left
	// it as it was.
	Skipped int `json:"skipped"`
}

// Result counts the records of an import per section (Sections): the
// records of each section of the file, and the devices granted to
// subaccounts (the "objects" of subaccount records) under "grants". Load
// returns a count for every section.
type Result map[string]Count

// String summarises the result, one section after another in the order
// they apply.
func (r Result) String() string {
	s := ""
	for i, sec := range ordered() {
		if i > 0 {
			s += "; "
		}
		c := r[sec.Name]
		s += fmt.Sprintf("%s: %d inserted, %d skipped", sec.Name, c.Inserted, c.Skipped)
	}
	return s
}

// RecordError is an invalid record of an import file. It wraps
// storage.ErrInvalid and its cause (which may be storage.ErrConflict for a
// unique constraint).
type RecordError struct {
	// Section is the file's section ("accounts", "services", ...).
	Section string
	// Index is the record's position in its section, from 0.
	Index int
	// Key names the record by its natural key, e.g. `imei "x", name "Oil"`.
	Key string
	// Err says what is wrong.
	Err error
}

// Error reads like `import: services[3] (imei "x", name "Oil"): unknown imei`.
func (e *RecordError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("import: %s[%d]: %v", e.Section, e.Index, e.Err)
	}
	return fmt.Sprintf("import: %s[%d] (%s): %v", e.Section, e.Index, e.Key, e.Err)
}

// Unwrap returns storage.ErrInvalid and the cause.
func (e *RecordError) Unwrap() []error { return []error{storage.ErrInvalid, e.Err} }

// Load loads a tenant data file (docs/design.md §8) into db in one transaction (a
// savepoint when db is a caller's bun.Tx). Records that match an existing
// row on their natural key are skipped, so loading the same file twice
// adds nothing. A file that is not valid JSON, has unknown fields or
// sections, or holds any invalid record changes nothing and returns an
// error wrapping storage.ErrInvalid: a *RecordError naming the record when
// one is to blame. It returns storage.ErrUnavailable when the database
// cannot be reached.
func Load(ctx context.Context, db bun.IDB, r io.Reader) (Result, error) {
	return LoadPlaced(ctx, db, r, Placement{})
}

// Placement says where the accounts of a file whose manager is not in the
// file (its roots: an exported subtree's root names its manager in the
// source installation) go in the importing database. The zero value keeps
// the managers the file names.
type Placement struct {
	// Under, when set, is the username of an existing account that
	// manages every root (fleetapi import --under).
	Under string
	// Top makes every root a top-level account, without a manager
	// (fleetapi import --top).
	Top bool
}

// LoadPlaced is Load with the file's roots placed by p: under an existing
// account, or at the top. The fixed levels (docs/design.md §2) still hold:
// a root that p would put under an account that cannot manage it, or a
// subaccount at the top, is refused like any invalid record, naming it.
// Under and Top together, or Under naming an account of the file, is
// storage.ErrInvalid.
func LoadPlaced(ctx context.Context, db bun.IDB, r io.Reader, p Placement) (Result, error) {
	if p.Under != "" && p.Top {
		return nil, fmt.Errorf("import: %w: place the roots under an account or at the top, not both", storage.ErrInvalid)
	}
	secs := ordered()
	steps, err := decodeImport(r, secs)
	if err != nil {
		return nil, err
	}
	res := Result{}
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		im := newImporter(tx)
		im.place = p
		for i, s := range secs {
			var n Count
			if err := steps[i](ctx, im, &n); err != nil {
				return err
			}
			res[s.Name] = n
		}
		return nil
	})
	if err != nil {
		return nil, storage.Translate(err)
	}
	return res, nil
}

// recordRef names one record of the file, for errors.
type recordRef struct {
	section string
	index   int
	key     string
}

// errorf returns a *RecordError for the record.
func (r recordRef) errorf(format string, args ...any) error {
	return &RecordError{Section: r.section, Index: r.index, Key: r.key, Err: fmt.Errorf(format, args...)}
}

// dbError names the record in a database error. Constraint violations
// become a *RecordError; an unreachable database stays
// storage.ErrUnavailable.
func (r recordRef) dbError(err error) error {
	if words, ok := constraintWords(err); ok {
		sentinel := storage.ErrInvalid
		if errors.Is(storage.Translate(err), storage.ErrConflict) {
			sentinel = storage.ErrConflict
		}
		return &RecordError{Section: r.section, Index: r.index, Key: r.key, Err: &violation{words: words, sentinel: sentinel, cause: err}}
	}
	err = storage.Translate(err)
	if errors.Is(err, storage.ErrInvalid) || errors.Is(err, storage.ErrConflict) {
		return &RecordError{Section: r.section, Index: r.index, Key: r.key, Err: err}
	}
	return fmt.Errorf("import: %s[%d]: %w", r.section, r.index, err)
}
