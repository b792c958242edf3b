// Package command is the framework of the synapse command line: verbs and
// the commands that group them, flags parsed wherever they appear, usage
// texts, the session of one run (global flags, the token, the HTTP client
// of the running agent), output helpers (JSON, aligned "key: value" lines,
// a progress line) and the mapping of errors onto exit codes.
//
// Package cli is the root: it holds the command table and dispatches to
// it; each command group is a package of verbs (cli/taskcmd, cli/peercmd,
// cli/groupcmd, ...) written against this one.
//
// # Verbs
//
// A Verb is one runnable command line ("task submit"). Its Setup defines
// the verb's flags and returns the function that runs it; the usage text
// calls Setup only to list the flags, so Setup does nothing else. A verb
// returns an error: nil exits 0, UsageErrorf exits 2 with the verb's usage,
// an *ExitError exits with its code, anything else exits 1 with the error
// and, for common failures, a hint.
package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// DefaultRequestTimeout is the usual --timeout of a verb that sends a
// request or two to the agent.
const DefaultRequestTimeout = 30 * time.Second

// MaxListPages bounds how many pages a list verb follows.
const MaxListPages = 10000

// RunFunc runs a verb with its positional arguments once its flags are parsed.
type RunFunc func(ctx context.Context, args []string) error

// Verb is one runnable command line: "task submit", "version", ...
type Verb struct {
	Name     string // full name after "synapse", e.g. "task submit"
	Args     string // positional arguments for the usage line, e.g. "TYPE"
	MinArgs  int
	MaxArgs  int // -1: no limit
	Summary  string
	About    string // more explanation, optional
	Examples []string
	// Agent adds the global flags of commands that talk to an agent, with
	// Timeout as the default of --timeout (0: none).
	Agent   bool
	Timeout time.Duration
	// PeerPin frees --fingerprint for the verb's own flag (the
	// certificate of the peer it pairs); the agent's certificate is then
	// --agent-fingerprint.
	PeerPin bool
	// Setup defines the verb's flags on fs and returns the function that
	// runs it; help output calls Setup only to list the flags.
	Setup func(fs *flag.FlagSet, s *Session) RunFunc
}

// Command is a top-level command: a group of verbs, or a single verb.
type Command struct {
	Name    string
	Summary string
	Verbs   []*Verb
	Leaf    *Verb
}

// Find returns the verb of c called name ("submit" for "task submit"), or nil.
func (c *Command) Find(name string) *Verb {
	for _, v := range c.Verbs {
		if strings.TrimPrefix(v.Name, c.Name+" ") == name {
			return v
		}
	}
	return nil
}

// NewFlagSet returns a flag set that prints nothing itself.
func NewFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// ParseInterspersed parses flags that may come before, between and after
// positional arguments, and returns the positional ones. "--" ends flags;
// "-" alone is a positional argument (standard input).
func ParseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for len(args) > 0 { // each round consumes at least one argument
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	return pos, nil
}

// Run parses a verb's flags and arguments, runs it and maps the result to
// an exit code.
func (s *Session) Run(ctx context.Context, v *Verb, args []string) int {
	fs := NewFlagSet("synapse " + v.Name)
	if v.Agent {
		s.registerGlobals(fs, v.Timeout, v.PeerPin)
	}
	run := v.Setup(fs, s)
	pos, err := ParseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		s.PrintVerbUsage(s.IO.Out, v)
		return ExitOK
	}
	if err == nil {
		switch {
		case len(pos) < v.MinArgs:
			err = fmt.Errorf("missing argument: want %s", v.Args)
		case v.MaxArgs >= 0 && len(pos) > v.MaxArgs:
			err = fmt.Errorf("unexpected argument %q", pos[v.MaxArgs])
		}
	}
	if err != nil {
		fmt.Fprintf(s.IO.Err, "synapse %s: %v\n\n", v.Name, err)
		s.PrintVerbUsage(s.IO.Err, v)
		return ExitUsage
	}
	if v.Agent {
		if err := s.Flags.validate(); err != nil {
			fmt.Fprintf(s.IO.Err, "synapse %s: %v\n\n", v.Name, err)
			s.PrintVerbUsage(s.IO.Err, v)
			return ExitUsage
		}
		if _, err := s.tlsConfig(); err != nil {
			return s.ExitCode(v, err)
		}
	}
	return s.ExitCode(v, run(ctx, pos))
}

// PrintCommandUsage writes the usage of a command with verbs.
func PrintCommandUsage(w io.Writer, c *Command) {
	fmt.Fprintf(w, "Usage: synapse %s VERB [flags] [args]\n\n%s.\n\nVerbs:\n", c.Name, upperFirst(c.Summary))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, v := range c.Verbs {
		fmt.Fprintf(tw, "  %s %s\t%s\n", strings.TrimPrefix(v.Name, c.Name+" "), v.Args, v.Summary)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nRun 'synapse %s VERB --help' for a verb's flags and examples.\n", c.Name)
}

// PrintVerbUsage writes the usage, flags and examples of a verb.
func (s *Session) PrintVerbUsage(w io.Writer, v *Verb) {
	fs := NewFlagSet("synapse " + v.Name)
	if v.Agent {
		s.registerGlobals(fs, v.Timeout, v.PeerPin)
	}
	v.Setup(fs, s)
	line := "synapse " + v.Name
	if v.Args != "" {
		line += " " + v.Args
	}
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		line += " [flags]"
	}
	fmt.Fprintf(w, "Usage: %s\n\n%s.\n", line, upperFirst(v.Summary))
	if v.About != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(v.About))
	}
	if hasFlags {
		fmt.Fprint(w, "\nFlags:\n")
		PrintFlags(w, fs)
	}
	if len(v.Examples) > 0 {
		fmt.Fprint(w, "\nExamples:\n")
		for _, e := range v.Examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

// PrintFlags lists the flags of fs as "--name VALUE  usage (default x)".
func PrintFlags(w io.Writer, fs *flag.FlagSet) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		name := "--" + f.Name
		if kind != "" {
			name += " " + kind
		}
		if d := f.DefValue; d != "" && d != "false" && d != "0" && d != "0s" && d != "[]" {
			usage += fmt.Sprintf(" (default %s)", d)
		}
		fmt.Fprintf(tw, "  %s\t%s\n", name, usage)
	})
	tw.Flush()
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// List is a repeatable flag of comma-separated values (--scope a,b --scope c).
type List []string

func (l *List) String() string { return strings.Join(*l, ",") }

// Set adds the comma-separated values of v, trimmed, empty ones left out.
func (l *List) Set(v string) error {
	for _, x := range strings.Split(v, ",") {
		if x = strings.TrimSpace(x); x != "" {
			*l = append(*l, x)
		}
	}
	return nil
}
