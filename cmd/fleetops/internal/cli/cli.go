// Package cli holds what every fleetops command does alike on its command
// line: parsing flags with -h on stdout, telling usage errors (exit status
// 2) from failures (1), and the loopback rule on every address a run
// talks to.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// UsageError is an error in how a command was called: an unknown flag or
// command, a missing or extra argument, a value out of bounds. main exits
// with status 2 on one, 1 on any other error.
type UsageError struct{ Err error }

// Error is the message of the wrapped error.
func (e UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the error itself.
func (e UsageError) Unwrap() error { return e.Err }

// Usagef returns a UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return UsageError{fmt.Errorf(format, args...)}
}

// IsUsage reports whether err is (or wraps) a UsageError.
func IsUsage(err error) bool {
	var u UsageError
	return errors.As(err, &u)
}

// Parse parses args into fs, which takes no positional arguments. On -h
// or --help it prints head and the flags' defaults to stdout and returns
// flag.ErrHelp (main exits 0). An unknown flag, a bad value or a
// positional argument is a UsageError; nothing is printed for it (main
// prints the error to stderr).
func Parse(fs *flag.FlagSet, args []string, stdout io.Writer, head string) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, head)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return flag.ErrHelp
	case err != nil:
		return UsageError{err}
	case fs.NArg() > 0:
		return Usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}
