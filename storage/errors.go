package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/uptrace/bun/driver/pgdriver"
)

// Sentinel errors of the storage layer; callers test them with errors.Is.
var (
	// ErrNotFound: no row matched (or the row is outside the caller's scope).
	ErrNotFound = errors.New("not found")
	// ErrConflict: a unique constraint refused the write.
	ErrConflict = errors.New("conflict")
	// ErrUnavailable: the database cannot be reached.
	ErrUnavailable = errors.New("database unavailable")
	// ErrInvalid: the data violates a check, foreign key or type constraint.
	ErrInvalid = errors.New("invalid data")
)

// Translate maps driver errors to the storage sentinels, keeping the
// original error in the chain. Errors that already carry a sentinel, and
// other errors, pass through unchanged.
func Translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) || errors.Is(err, ErrInvalid) || errors.Is(err, ErrUnavailable) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	var pgErr pgdriver.Error
	if errors.As(err, &pgErr) {
		code := pgErr.Field('C')
		switch {
		case code == "23505":
			return fmt.Errorf("%w: %s", ErrConflict, pgErr.Field('M'))
		case code == "23503", code == "23514", code == "23502", code == "22P02", code == "22007", code == "22008", code == "22003", code == "22001":
			return fmt.Errorf("%w: %s", ErrInvalid, pgErr.Field('M'))
		case code == "57P01", code == "57P02", code == "57P03", code == "53300", len(code) == 5 && code[:2] == "08":
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return err
	}
	// database/sql has no exported sentinel for a closed pool.
	if errors.Is(err, sql.ErrConnDone) || err.Error() == "sql: database is closed" {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}
