package command

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// Exit codes of the command line.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// ErrUsage marks a usage error (exit 2).
var ErrUsage = errors.New("usage error")

// UsageErrorf reports a usage error found while running a verb: the
// message, then the verb's usage, on standard error, and exit 2.
func UsageErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, args...))
}

// ExitError ends a command with exit code Code after printing Msg (if not
// empty) on standard error.
type ExitError struct {
	Code int
	Msg  string
}

func (e *ExitError) Error() string { return e.Msg }

// ExitCode prints err as it deserves and returns the exit code; a nil v
// stands for serve, which prints its own usage errors.
func (s *Session) ExitCode(v *Verb, err error) int {
	name := "serve"
	if v != nil {
		name = v.Name
	}
	var ee *ExitError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.As(err, &ee):
		if ee.Msg != "" {
			fmt.Fprintln(s.IO.Err, ee.Msg)
		}
		return ee.Code
	case errors.Is(err, ErrUsage):
		if v == nil {
			return ExitUsage // serve printed its own message
		}
		fmt.Fprintf(s.IO.Err, "synapse %s: %s\n\n", name, strings.TrimPrefix(err.Error(), ErrUsage.Error()+": "))
		s.PrintVerbUsage(s.IO.Err, v)
		return ExitUsage
	}
	fmt.Fprintf(s.IO.Err, "synapse %s: %v\n", name, err)
	if hint := s.hint(err); hint != "" {
		fmt.Fprintf(s.IO.Err, "hint: %s\n", hint)
	}
	return ExitFailure
}
