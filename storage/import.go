package storage

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/uptrace/bun"
)

// ImportCount is what an import did with the records of one section.
type ImportCount struct {
	// Inserted records were new.
	Inserted int `json:"inserted"`
	// Skipped records matched an existing row on their natural key and left
	// it as it was.
	Skipped int `json:"skipped"`
}

// ImportResult counts the records of an import per section. Grants are the
// devices granted to subaccounts (the "objects" of subaccount records).
type ImportResult struct {
	Accounts   ImportCount `json:"accounts"`
	Objects    ImportCount `json:"objects"`
	Grants     ImportCount `json:"grants"`
	Tokens     ImportCount `json:"tokens"`
	Services   ImportCount `json:"services"`
	Reports    ImportCount `json:"reports"`
	Events     ImportCount `json:"events"`
	Passengers ImportCount `json:"passengers"`
}

// String summarises the result, one section after another.
func (r ImportResult) String() string {
	s := ""
	for i, c := range []struct {
		name string
		ImportCount
	}{
		{"accounts", r.Accounts}, {"objects", r.Objects}, {"grants", r.Grants}, {"tokens", r.Tokens},
		{"services", r.Services}, {"reports", r.Reports}, {"events", r.Events}, {"passengers", r.Passengers},
	} {
		if i > 0 {
			s += "; "
		}
		s += fmt.Sprintf("%s: %d inserted, %d skipped", c.name, c.Inserted, c.Skipped)
	}
	return s
}

// ImportError is an invalid record of an import file. It wraps ErrInvalid
// and its cause (which may be ErrConflict for a unique constraint).
type ImportError struct {
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
func (e *ImportError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("import: %s[%d]: %v", e.Section, e.Index, e.Err)
	}
	return fmt.Sprintf("import: %s[%d] (%s): %v", e.Section, e.Index, e.Key, e.Err)
}

// Unwrap returns ErrInvalid and the cause.
func (e *ImportError) Unwrap() []error { return []error{ErrInvalid, e.Err} }

// Import loads a tenant data file (DESIGN §8) in one transaction (a
// savepoint when the Store runs on a caller's bun.Tx). Records
// that match an existing row on their natural key are skipped, so importing
// the same file twice adds nothing. A file that is not valid JSON, has
// unknown fields or sections, or holds any invalid record changes nothing
// and returns an error wrapping ErrInvalid: an *ImportError naming the
// record when one is to blame. It returns ErrUnavailable when the database
// cannot be reached.
func (s *Store) Import(ctx context.Context, r io.Reader) (ImportResult, error) {
	f, err := decodeImport(r)
	if err != nil {
		return ImportResult{}, err
	}
	var res ImportResult
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		im := newImporter(tx)
		if err := im.run(ctx, f); err != nil {
			return err
		}
		res = im.res
		return nil
	})
	if err != nil {
		return ImportResult{}, Translate(err)
	}
	return res, nil
}

// run applies the sections in dependency order.
func (im *importer) run(ctx context.Context, f *importFile) error {
	steps := []func(context.Context, *importFile) error{
		im.importAccounts, im.importObjects, im.importGrants, im.importTokens,
		im.importServices, im.importReports, im.importEvents, im.importPassengers,
	}
	for _, step := range steps {
		if err := step(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// recordRef names one record of the file, for errors.
type recordRef struct {
	section string
	index   int
	key     string
}

// errorf returns an *ImportError for the record.
func (r recordRef) errorf(format string, args ...any) error {
	return &ImportError{Section: r.section, Index: r.index, Key: r.key, Err: fmt.Errorf(format, args...)}
}

// dbError names the record in a database error. Constraint violations
// become an *ImportError; an unreachable database stays ErrUnavailable.
func (r recordRef) dbError(err error) error {
	if words, ok := constraintWords(err); ok {
		sentinel := ErrInvalid
		if errors.Is(Translate(err), ErrConflict) {
			sentinel = ErrConflict
		}
		return &ImportError{Section: r.section, Index: r.index, Key: r.key, Err: worded(sentinel, err, "%s", words)}
	}
	err = Translate(err)
	if errors.Is(err, ErrInvalid) || errors.Is(err, ErrConflict) {
		return &ImportError{Section: r.section, Index: r.index, Key: r.key, Err: err}
	}
	return fmt.Errorf("import: %s[%d]: %w", r.section, r.index, err)
}
