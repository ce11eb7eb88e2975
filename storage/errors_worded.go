package storage

import "fmt"

// wordedError is an error told in the operator's words (`account "acme"
// not found`) that still matches its sentinel with errors.Is, and keeps
// the driver's error, if any, in its chain for logs and debugging without
// showing it in its message.
type wordedError struct {
	msg      string
	sentinel error
	cause    error
}

// worded returns a wordedError for sentinel with a message built like
// fmt.Sprintf; cause (may be nil) stays in the chain.
func worded(sentinel, cause error, format string, args ...any) error {
	return &wordedError{msg: fmt.Sprintf(format, args...), sentinel: sentinel, cause: cause}
}

func (e *wordedError) Error() string { return e.msg }

// Unwrap returns the sentinel and the cause.
func (e *wordedError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.sentinel}
	}
	return []error{e.sentinel, e.cause}
}
