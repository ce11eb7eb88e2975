package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// console is where a command writes (docs/design.md §7): out for its data (token
// secrets, listings, documents, JSON lines) and log for progress and the
// server's log, so that `fleetapi generate > tokens.jsonl` is a clean file.
type console struct {
	out, log io.Writer
}

// Exit codes of the program (docs/design.md §7).
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// errHelp reports that a command printed its usage because -h or --help
// was asked for: the program then ends with exit 0.
var errHelp = flag.ErrHelp

// usageError is a mistake in the command line (an unknown command or flag,
// a missing or extra argument, a value that cannot be right): exit 2.
type usageError struct {
	// command is the command whose usage applies ("token create").
	command string
	err     error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usageError of command.
func usagef(command, format string, args ...any) error {
	return &usageError{command: command, err: fmt.Errorf(format, args...)}
}

// exitCode is the exit status for the error run returned.
func exitCode(err error) int {
	var ue *usageError
	var se *statusError
	switch {
	case err == nil, errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &se):
		return se.code
	}
	return exitFailure
}

// command is one command or subcommand: its name ("token create"), the
// rest of its usage line (positional arguments included) and what it does.
// Its flag set prints nothing by itself; parse prints the usage on -h.
type command struct {
	name, synopsis, doc string
	fs                  *flag.FlagSet
	// err is a mistake found while the command was set up (a configuration
	// from the environment that does not parse): parse returns it.
	err error
}

// newCommand returns a command with an empty flag set. synopsis follows
// "fleetapi NAME" on the usage line, e.g. "[flags] ID...".
func newCommand(name, synopsis, doc string) *command {
	c := &command{name: name, synopsis: synopsis, doc: doc, fs: flag.NewFlagSet("fleetapi "+name, flag.ContinueOnError)}
	c.fs.SetOutput(io.Discard)
	return c
}

// usage writes the command's usage: the usage line, what it does, and its
// flags.
func (c *command) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: fleetapi %s %s\n\n%s\n", c.name, c.synopsis, strings.TrimSpace(c.doc))
	n := 0
	c.fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintln(w, "\nflags:")
		c.fs.SetOutput(w)
		c.fs.PrintDefaults()
		c.fs.SetOutput(io.Discard)
	}
}

// parse parses args. Flags may come before, between or after the
// positional arguments (`policy diff OLD NEW --json`), as in every
// command; after "--" everything is positional. It first returns the
// error of the command's set-up, if any. On -h or --help it writes
// the usage to con.out and returns errHelp; a flag error is a usageError.
func (c *command) parse(args []string, con console) error {
	if c.err != nil {
		return c.err
	}
	err := c.fs.Parse(flagsFirst(c.fs, args))
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.usage(con.out)
		return errHelp
	case err != nil:
		return &usageError{command: c.name, err: fmt.Errorf("%s: %w", c.name, err)}
	}
	return nil
}

// parseArgs parses args (parse) and checks that min to max positional
// arguments are left (args).
func (c *command) parseArgs(args []string, con console, min, max int) error {
	if err := c.parse(args, con); err != nil {
		return err
	}
	return c.args(min, max)
}

// flagsFirst reorders args so that the standard flag package, which stops
// at the first positional argument, sees every flag: the flags (each with
// its value, when it takes one as the next argument), then "--", then the
// positional arguments in their order. "-" alone is positional; an unknown
// flag is left for Parse to report.
func flagsFirst(fs *flag.FlagSet, args []string) []string {
	var flags, positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if i+1 < len(args) {
			flags = append(flags, args[i+1])
			i++
		}
	}
	return append(append(flags, "--"), positional...)
}

// args checks the number of positional arguments left after the flags.
func (c *command) args(min, max int) error {
	n := c.fs.NArg()
	switch {
	case n < min:
		return usagef(c.name, "%s: missing arguments (usage: fleetapi %s %s)", c.name, c.name, c.synopsis)
	case max >= 0 && n > max:
		return usagef(c.name, "%s: unexpected argument %q", c.name, c.fs.Arg(max))
	}
	return nil
}

// set reports whether the flag was given on the command line.
func (c *command) set(name string) bool {
	given := false
	c.fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// runFunc runs a command or subcommand with the arguments after its name.
type runFunc func(ctx context.Context, args []string, getenv func(string) string, con console) error

// group is a command made of subcommands ("token create|list|revoke"):
// it answers -h and a missing or unknown subcommand itself, and runs the
// subcommand asked for.
type group struct {
	name, doc string
	// subs lists the subcommands, in order.
	subs []subcommand
}

// subcommand is one subcommand of a group: its name, the one-line
// description the group's usage lists, and exec, which runs it.
type subcommand struct {
	name, summary string
	exec          runFunc
}

// newGroup returns the group name, described by doc, of the subcommands
// subs in the order its usage lists them.
func newGroup(name, doc string, subs ...subcommand) group {
	return group{name: name, doc: doc, subs: subs}
}

func (g group) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: fleetapi %s %s [flags] [arguments]\n\n%s\n\n", g.name, strings.Join(g.names(), "|"), strings.TrimSpace(g.doc))
	for _, s := range g.subs {
		fmt.Fprintf(w, "  %-8s %s\n", s.name, s.summary)
	}
	fmt.Fprintf(w, "\nRun `fleetapi %s SUBCOMMAND -h` for the flags and arguments of one.\n", g.name)
}

// run runs the subcommand args[0] with the rest of args. It answers
// -h/--help (errHelp after printing the usage to con.out) and a missing or
// unknown subcommand (a usageError).
func (g group) run(ctx context.Context, args []string, getenv func(string) string, con console) error {
	if len(args) == 0 {
		return usagef(g.name, "%s: want a subcommand: %s", g.name, strings.Join(g.names(), ", "))
	}
	if isHelp(args[0]) {
		g.usage(con.out)
		return errHelp
	}
	for _, s := range g.subs {
		if s.name == args[0] {
			return s.exec(ctx, args[1:], getenv, con)
		}
	}
	return usagef(g.name, "%s: unknown subcommand %q (want %s)", g.name, args[0], strings.Join(g.names(), ", "))
}

// names returns the names of the subcommands, in order.
func (g group) names() []string {
	names := make([]string, len(g.subs))
	for i, s := range g.subs {
		names[i] = s.name
	}
	return names
}

func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// statusError ends the program with an exit status of its own, other
// than exitFailure and exitUsage: policy diff's exitWidens.
type statusError struct {
	code int
	err  error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }
