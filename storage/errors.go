package storage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strings"
	"syscall"

	"github.com/uptrace/bun/driver/pgdriver"
)

// Sentinel errors of the storage layer; callers test them with errors.Is.
var (
	// ErrNotFound: no row matched (or the row is outside the caller's scope).
	ErrNotFound = errors.New("not found")
	// ErrConflict: a unique constraint refused the write.
	ErrConflict = errors.New("conflict")
	// ErrUnavailable: the database cannot be reached, or lost the
	// connection, or is shutting down, out of resources or overloaded: the
	// same request may succeed later.
	ErrUnavailable = errors.New("database unavailable")
	// ErrInvalid: a value given by the client was refused: a data exception
	// (SQLSTATE class 22) or an integrity constraint other than uniqueness.
	ErrInvalid = errors.New("invalid data")
)

// InvalidFields is the ErrInvalid of an input that storage validates
// before it writes (ValidateNewToken): a reason per field of the input,
// each under the field's own name, every failing field at once (one
// field's fault never hides or takes the place of another's). The api
// reports them as VALIDATION_FAILED details.fields as they are.
type InvalidFields map[string]string

// Error is every reason, in the order of the field names.
func (e InvalidFields) Error() string {
	reasons := make([]string, 0, len(e))
	for _, f := range slices.Sorted(maps.Keys(e)) {
		reasons = append(reasons, e[f])
	}
	return ErrInvalid.Error() + ": " + strings.Join(reasons, "; ")
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e InvalidFields) Is(target error) bool { return target == ErrInvalid }

// orNil is e as an error, nil when it names no field.
func (e InvalidFields) orNil() error {
	if len(e) == 0 {
		return nil
	}
	return e
}

// InvalidError is the ErrInvalid of a value the database refused. Reason
// is safe to show to the client: for a data exception it is PostgreSQL's
// message about the value (`invalid input syntax for type date: "x"`),
// for a constraint a fixed phrase (never a constraint name). PostgreSQL
// does not say which bound parameter of a statement it refused, so only
// Column, when the server names one, locates the value.
type InvalidError struct {
	SQLState string
	Column   string
	Reason   string
	cause    error
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("%v: %s (SQLSTATE %s): %v", ErrInvalid, e.Reason, e.SQLState, e.cause)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns the driver's error.
func (e *InvalidError) Unwrap() error { return e.cause }

// Translate classifies an error of a statement that carries values from
// the client into the storage sentinels, keeping the original error in the
// chain. It decides by SQLSTATE class and by connection state, never by
// message text:
//
//   - sql.ErrNoRows: ErrNotFound.
//   - 23505 unique_violation: ErrConflict; the rest of class 23
//     (integrity constraints) and class 22 (data exception: a value of
//     the wrong form, out of range, an invalid pattern or escape): an
//     *InvalidError (ErrInvalid).
//   - Class 08 (connection exception), 40 (transaction rollback:
//     serialization failure, deadlock), 53 (insufficient resources, too
//     many connections), 57 (operator intervention: shutdown, terminated
//     backend, cancelled statement), 58 (system error), 25006 (a read-only
//     server, as after a fail-over), and any error of severity FATAL or
//     PANIC (the server closed the connection): ErrUnavailable.
//   - The connection dying under a statement (io.EOF, io.ErrUnexpectedEOF,
//     EPIPE, ECONNRESET, ECONNABORTED, ECONNREFUSED, net.ErrClosed, any
//     net.Error, driver.ErrBadConn, sql.ErrConnDone, a closed pool) and a
//     deadline passing (context.DeadlineExceeded): ErrUnavailable.
//
// Everything else (a syntax error, an undefined column, class XX: a defect
// of the server) passes through unchanged and becomes a 500. So does
// context.Canceled: the caller went away, the database did not. Errors
// that already carry a sentinel pass through unchanged, so translating
// twice does nothing.
func Translate(err error) error { return translate(err, true) }

// translateOwn is Translate for statements whose values are all the
// server's own (ids it parsed as integers, token hashes, the clock): a data
// exception there is a defect of the server, not a value of the client's,
// so class 22 stays unclassified (500) instead of ErrInvalid.
func translateOwn(err error) error { return translate(err, false) }

func translate(err error, clientValues bool) error {
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
		return translateServerError(err, pgErr, clientValues)
	}
	if connectionLost(err) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// translateServerError classifies an ErrorResponse of PostgreSQL by its
// SQLSTATE class and severity.
func translateServerError(err error, pgErr pgdriver.Error, clientValues bool) error {
	code := pgErr.Field('C')
	class := ""
	if len(code) == 5 {
		class = code[:2]
	}
	severity := pgErr.Field('V') // not localised (PostgreSQL 9.6+)
	if severity == "" {
		severity = pgErr.Field('S')
	}
	switch {
	case severity == "FATAL" || severity == "PANIC",
		class == "08", class == "40", class == "53", class == "57", class == "58",
		code == "25006":
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	case code == "23505":
		return fmt.Errorf("%w: %w", ErrConflict, err)
	case class == "23":
		return &InvalidError{SQLState: code, Column: constraintColumn(pgErr), Reason: constraintReason(code), cause: err}
	case class == "22" && clientValues:
		return &InvalidError{SQLState: code, Column: pgErr.Field('c'), Reason: pgErr.Field('M'), cause: err}
	}
	return err
}

// constraintColumn is the column a violated constraint is about: the one
// PostgreSQL names, else, for a column's CHECK, the column in its name
// (PostgreSQL names a column constraint <table>_<column>_check, as the
// import reads it too: importfile's constraintWords); "" when neither
// says.
func constraintColumn(pgErr pgdriver.Error) string {
	if c := pgErr.Field('c'); c != "" {
		return c
	}
	table, name := pgErr.Field('t'), pgErr.Field('n')
	if pgErr.Field('C') != "23514" || table == "" || !strings.HasPrefix(name, table+"_") || !strings.HasSuffix(name, "_check") {
		return ""
	}
	return strings.TrimSuffix(strings.TrimPrefix(name, table+"_"), "_check")
}

// constraintReason describes a violated integrity constraint without
// naming it.
func constraintReason(code string) string {
	switch code {
	case "23502":
		return "a required value is missing"
	case "23503":
		return "the value refers to a record that does not exist"
	case "23514":
		return "the value is outside the allowed range"
	}
	return "the value violates a constraint"
}

// connectionLost reports whether err means that the connection to the
// database broke or could not be made, or that the statement's deadline
// passed: states of the connection, not of the statement.
func connectionLost(err error) bool {
	if errors.Is(err, context.Canceled) {
		// The client went away (and perhaps the pool then failed); that is
		// the caller's business, not the database's.
		return false
	}
	var netErr net.Error
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, net.ErrClosed), errors.As(err, &netErr),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, errDBClosed):
		return true
	}
	return false
}

// errDBClosed is database/sql's unexported error for a closed pool ("sql:
// database is closed"), taken from a pool closed for the purpose, so that
// errors.Is finds it however it is wrapped.
var errDBClosed = func() error {
	db := sql.OpenDB(closedConnector{})
	_ = db.Close()
	return db.PingContext(context.Background())
}()

// closedConnector is a driver.Connector that never connects.
type closedConnector struct{}

func (closedConnector) Connect(context.Context) (driver.Conn, error) { return nil, driver.ErrBadConn }
func (closedConnector) Driver() driver.Driver                        { return nil }
