package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/audit"
	"github.com/fleetapi/fleetapi/storage/limits"
	"github.com/fleetapi/fleetapi/tenancy"
)

// Error is an API failure as the client sees it: the HTTP status and the
// error object of the spec's error envelope. Every failure, whatever its
// origin, is turned into an Error by errorFor before it is written.
type Error struct {
	Status  int            `json:"-"`
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
	// RetryAfter, in seconds, is sent as the Retry-After header when set.
	RetryAfter int `json:"-"`
	// cause is the internal error behind a 500/503; it is logged and recorded
	// on the span, never sent.
	cause error
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// StatusCode lets Fuego's serializers see the status.
func (e *Error) StatusCode() int { return e.Status }

// Unwrap returns the internal cause, if any.
func (e *Error) Unwrap() error { return e.cause }

// The error codes of docs/design.md §4.
const (
	CodeInvalidParameter      = "INVALID_PARAMETER"
	CodeInvalidBody           = "INVALID_BODY"
	CodeValidationFailed      = "VALIDATION_FAILED"
	CodeAuthRequired          = "AUTH_REQUIRED"
	CodeInvalidToken          = "INVALID_TOKEN"
	CodeTokenExpired          = "TOKEN_EXPIRED"
	CodeAccountInactive       = "ACCOUNT_INACTIVE"
	CodeAccountExpired        = "ACCOUNT_EXPIRED"
	CodeTokenPermissionDenied = "TOKEN_PERMISSION_DENIED"
	CodePrivilegeRequired     = "PRIVILEGE_REQUIRED"
	CodeReadOnlyAccount       = "READ_ONLY_ACCOUNT"
	CodeManagementDenied      = "MANAGEMENT_DENIED"
	CodeQuotaExceeded         = "QUOTA_EXCEEDED"
	CodeNotFound              = "NOT_FOUND"
	CodeMethodNotAllowed      = "METHOD_NOT_ALLOWED"
	CodeConflict              = "CONFLICT"
	CodeIdempotencyKeyReused  = "IDEMPOTENCY_KEY_REUSED"
	CodePayloadTooLarge       = "PAYLOAD_TOO_LARGE"
	CodeUnsupportedMediaType  = "UNSUPPORTED_MEDIA_TYPE"
	CodeRateLimited           = "RATE_LIMITED"
	CodeInternal              = "INTERNAL_ERROR"
	CodeUnavailable           = "SERVICE_UNAVAILABLE"
)

// codeStatus is the one table from error code to HTTP status.
var codeStatus = map[string]int{
	CodeInvalidParameter:      http.StatusBadRequest,
	CodeInvalidBody:           http.StatusBadRequest,
	CodeValidationFailed:      http.StatusBadRequest,
	CodeAuthRequired:          http.StatusUnauthorized,
	CodeInvalidToken:          http.StatusUnauthorized,
	CodeTokenExpired:          http.StatusUnauthorized,
	CodeAccountInactive:       http.StatusUnauthorized,
	CodeAccountExpired:        http.StatusUnauthorized,
	CodeTokenPermissionDenied: http.StatusForbidden,
	CodePrivilegeRequired:     http.StatusForbidden,
	CodeReadOnlyAccount:       http.StatusForbidden,
	CodeManagementDenied:      http.StatusForbidden,
	CodeQuotaExceeded:         http.StatusForbidden,
	CodeNotFound:              http.StatusNotFound,
	CodeMethodNotAllowed:      http.StatusMethodNotAllowed,
	CodeConflict:              http.StatusConflict,
	CodeIdempotencyKeyReused:  http.StatusConflict,
	CodePayloadTooLarge:       http.StatusRequestEntityTooLarge,
	CodeUnsupportedMediaType:  http.StatusUnsupportedMediaType,
	CodeRateLimited:           http.StatusTooManyRequests,
	CodeInternal:              http.StatusInternalServerError,
	CodeUnavailable:           http.StatusServiceUnavailable,
}

// ErrorCode is one row of the error table: a code and its HTTP status.
type ErrorCode struct {
	Code   string
	Status int
}

// ErrorTable returns the error table the server answers with, by status
// and then code (docs/api.md §8 lists every one).
func ErrorTable() []ErrorCode {
	codes := make([]ErrorCode, 0, len(codeStatus))
	for c, s := range codeStatus {
		codes = append(codes, ErrorCode{c, s})
	}
	slices.SortFunc(codes, func(a, b ErrorCode) int {
		if a.Status != b.Status {
			return a.Status - b.Status
		}
		return strings.Compare(a.Code, b.Code)
	})
	return codes
}

// newError returns the Error for code, with its status from the table. An
// unknown code is a programming error and becomes a 500.
func newError(code, message string, details map[string]any) *Error {
	status, ok := codeStatus[code]
	if !ok {
		return &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error"}
	}
	return &Error{Status: status, Code: code, Message: message, Details: details}
}

// errorFor turns any error into the Error the client receives.
func errorFor(err error) *Error {
	var apiErr *Error
	if errors.As(err, &apiErr) {
		return apiErr
	}
	var tooBig *http.MaxBytesError
	var secret *audit.SecretValueError
	var quota *limits.QuotaError
	switch {
	case errors.As(err, &quota):
		// A create over one of the account's quotas (docs/design.md §12).
		return newError(CodeQuotaExceeded, fmt.Sprintf("the account's %s quota (%d) is used up", quota.Quota, quota.Limit),
			map[string]any{"quota": string(quota.Quota), "limit": quota.Limit, "used": quota.Used})
	case errors.As(err, &secret):
		// A value of the request is the secret of an existing token or its
		// stored hash: the audit trail would hold it (docs/design.md §9). The
		// field is named, the value never repeated.
		return newError(CodeValidationFailed, "the request is not valid", map[string]any{"fields": map[string]any{
			secret.Field: "holds a token secret or a token hash; choose another value"}})
	case errors.As(err, &tooBig):
		return tooLarge(tooBig.Limit)
	case errors.Is(err, tenancy.ErrNoCredentials):
		return newError(CodeAuthRequired, "the Authorization header is required", nil)
	case errors.Is(err, tenancy.ErrInvalidToken):
		return newError(CodeInvalidToken, "the token is malformed, unknown or revoked", nil)
	case errors.Is(err, tenancy.ErrTokenExpired):
		return newError(CodeTokenExpired, "the token has expired", nil)
	case errors.Is(err, storage.ErrNotFound):
		return newError(CodeNotFound, "not found", nil)
	case errors.Is(err, storage.ErrConflict):
		return newError(CodeConflict, "the request conflicts with an existing record", nil)
	case errors.Is(err, storage.ErrInvalid):
		// The database refused a value of the request (a data exception
		// on a read with the client's parameters): the second line of
		// defence behind the api's own parsing. PostgreSQL does not say
		// which bound parameter it refused, so details.parameter is
		// omitted and details.reason says what was wrong.
		return newError(CodeInvalidParameter, "a parameter value was refused", map[string]any{"reason": invalidReason(err)})
	case errors.Is(err, storage.ErrUnavailable), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		// context.Canceled: the client went away before the answer; nobody
		// reads it, and writeError does not log it as a failure.
		e := newError(CodeUnavailable, "the service is temporarily unavailable", nil)
		e.RetryAfter = 5
		e.cause = err
		return e
	}
	var fe fuego.ErrorWithStatus
	if errors.As(err, &fe) && fe.StatusCode() >= 400 && fe.StatusCode() < 500 {
		// Fuego's own decoding and validation errors (400 or 422).
		return newError(CodeInvalidParameter, fuegoDetail(err), nil)
	}
	e := newError(CodeInternal, "internal error", nil)
	e.cause = err
	return e
}

// invalidReason is the client-safe reason of a storage.ErrInvalid.
func invalidReason(err error) string {
	var ie *storage.InvalidError
	if errors.As(err, &ie) && ie.Reason != "" {
		return ie.Reason
	}
	return "the value is not valid"
}

// invalidFields is the details of a VALIDATION_FAILED made of a
// storage.ErrInvalid: fields maps each field of a storage.InvalidFields,
// or the column when the database named one, to its reason; else the
// reason alone.
func invalidFields(err error) map[string]any {
	var fields storage.InvalidFields
	if errors.As(err, &fields) {
		out := map[string]any{}
		for f, reason := range fields {
			out[f] = reason
		}
		return map[string]any{"fields": out}
	}
	var ie *storage.InvalidError
	if errors.As(err, &ie) && ie.Column != "" {
		return map[string]any{"fields": map[string]any{ie.Column: invalidReason(err)}}
	}
	return map[string]any{"reason": invalidReason(err)}
}

func fuegoDetail(err error) string {
	var d fuego.ErrorWithDetail
	if errors.As(err, &d) && d.DetailMsg() != "" {
		return d.DetailMsg()
	}
	return "invalid request"
}

// notFoundAs is the answer for a row id outside the caller's scope or
// that does not exist (storage.ErrNotFound): the same bytes either way,
// 404 "<what> not found". Any other error passes unchanged.
func notFoundAs(what string, err error) error {
	if errors.Is(err, storage.ErrNotFound) {
		return newError(CodeNotFound, what+" not found", nil)
	}
	return err
}
