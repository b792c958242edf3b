package cli

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

// runFunc runs a verb with its positional arguments once its flags are parsed.
type runFunc func(ctx context.Context, args []string) error

// verb is one runnable command line: "task submit", "version", ...
type verb struct {
	name     string // full name after "synapse", e.g. "task submit"
	args     string // positional arguments for the usage line, e.g. "TYPE"
	minArgs  int
	maxArgs  int // -1: no limit
	summary  string
	about    string // more explanation, optional
	examples []string
	// agent adds the global flags of commands that talk to an agent, with
	// timeout as the default of --timeout (0: none).
	agent   bool
	timeout time.Duration
	// setup defines the verb's flags on fs and returns the function that
	// runs it; help output calls setup only to list the flags.
	setup func(fs *flag.FlagSet, s *session) runFunc
}

// command is a top-level command: a group of verbs, or a single verb.
type command struct {
	name    string
	summary string
	verbs   []*verb
	leaf    *verb
}

func (c *command) find(name string) *verb {
	for _, v := range c.verbs {
		if strings.TrimPrefix(v.name, c.name+" ") == name {
			return v
		}
	}
	return nil
}

// commands returns the command table in the order of the main usage.
func commands() []*command {
	return []*command{
		{name: "serve", summary: "run the agent (HTTP API, task engine, store)"},
		{name: "task", summary: "submit, follow and manage tasks", verbs: taskVerbs()},
		{name: "token", summary: "manage API tokens (admin)", verbs: tokenVerbs()},
		{name: "db", summary: "check and back up the database", verbs: dbVerbs()},
		{name: "tier1", summary: "tier-1 routines: list, load-test ingest, export frames", verbs: tier1Verbs()},
		{name: "peer", summary: "pair with other agents, accept their pair requests, list them", verbs: peerVerbs()},
		{name: "identity", summary: identityVerb.summary, leaf: identityVerb},
		{name: "outbox", summary: "inspect and replay undelivered messages (admin)", verbs: outboxVerbs()},
		{name: "hil", summary: "decisions waiting for a person: list, show, approve, reject, modify", verbs: hilVerbs()},
		{name: "group", summary: "groups of agents: create, invite, join, leave, disband, send, tasks", verbs: groupVerbs()},
		{name: "vote", summary: "votes in a group: open, cast, show, list", verbs: voteVerbs()},
		{name: "capabilities", summary: capabilitiesVerb.summary, leaf: capabilitiesVerb},
		{name: "caps", summary: "short for capabilities", leaf: capabilitiesVerb},
		{name: "registry", summary: "agents registered with this one: list, find by capability, remove", verbs: registryVerbs()},
		{name: "negotiate", summary: negotiateVerb.summary, leaf: negotiateVerb},
		{name: "contract", summary: "protocol contracts with peers: list, show, revoke", verbs: contractVerbs()},
		{name: "audit", summary: "the hash-chained audit log of security events: list, verify", verbs: auditVerbs()},
		{name: "version", summary: versionVerb.summary, leaf: versionVerb},
		{name: "help", summary: "show help for a command or verb"},
	}
}

func findCommand(name string) *command {
	for _, c := range commands() {
		if c.name == name && c.name != "help" {
			return c
		}
	}
	return nil
}

// newFlagSet returns a flag set that prints nothing itself.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseInterspersed parses flags that may come before, between and after
// positional arguments, and returns the positional ones. "--" ends flags;
// "-" alone is a positional argument (standard input).
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
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

// runVerb parses a verb's flags and arguments, runs it and maps the result
// to an exit code.
func runVerb(ctx context.Context, s *session, v *verb, args []string) int {
	fs := newFlagSet("synapse " + v.name)
	if v.agent {
		s.g.register(fs, v.timeout)
	}
	run := v.setup(fs, s)
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		printVerbUsage(s.io.Out, s, v)
		return ExitOK
	}
	if err == nil {
		switch {
		case len(pos) < v.minArgs:
			err = fmt.Errorf("missing argument: want %s", v.args)
		case v.maxArgs >= 0 && len(pos) > v.maxArgs:
			err = fmt.Errorf("unexpected argument %q", pos[v.maxArgs])
		}
	}
	if err != nil {
		fmt.Fprintf(s.io.Err, "synapse %s: %v\n\n", v.name, err)
		printVerbUsage(s.io.Err, s, v)
		return ExitUsage
	}
	if v.agent {
		if err := s.g.validate(); err != nil {
			fmt.Fprintf(s.io.Err, "synapse %s: %v\n\n", v.name, err)
			printVerbUsage(s.io.Err, s, v)
			return ExitUsage
		}
	}
	return s.exitCode(v, run(ctx, pos))
}

// usageErrorf reports a usage error found while running a verb.
func usageErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// exitCode prints err as it deserves and returns the exit code.
func (s *session) exitCode(v *verb, err error) int {
	name := "serve"
	if v != nil {
		name = v.name
	}
	var ee *exitError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintln(s.io.Err, ee.msg)
		}
		return ee.code
	case errors.Is(err, errUsage):
		if v == nil {
			return ExitUsage // serve printed its own message
		}
		fmt.Fprintf(s.io.Err, "synapse %s: %s\n\n", name, strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		printVerbUsage(s.io.Err, s, v)
		return ExitUsage
	}
	fmt.Fprintf(s.io.Err, "synapse %s: %v\n", name, err)
	if hint := s.hint(err); hint != "" {
		fmt.Fprintf(s.io.Err, "hint: %s\n", hint)
	}
	return ExitFailure
}

// printMainUsage writes the top-level usage.
func printMainUsage(w io.Writer, s *session) {
	fmt.Fprint(w, `synapse: the Synapse edge agent and its command line

Usage:
  synapse [global flags] COMMAND [VERB] [flags] [args]

Commands:
`)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range commands() {
		verbs := ""
		for i, v := range c.verbs {
			if i == 0 {
				verbs = " ("
			} else {
				verbs += ", "
			}
			verbs += strings.TrimPrefix(v.name, c.name+" ")
		}
		if verbs != "" {
			verbs += ")"
		}
		fmt.Fprintf(tw, "  %s\t%s%s\n", c.name, c.summary, verbs)
	}
	tw.Flush()
	fmt.Fprint(w, "\nGlobal flags (also accepted after the verb):\n")
	fs := newFlagSet("synapse")
	s.g.register(fs, 0)
	fs.Bool("version", false, "print the version and exit")
	printFlags(w, fs)
	fmt.Fprint(w, `
Run 'synapse help COMMAND' or 'synapse COMMAND VERB --help' for details.

Examples:
  synapse serve --data ./data --listen 127.0.0.1:8080
  synapse task submit echo --payload '{"msg":"hi"}' --wait 10s
  synapse task watch TASK_ID
  synapse token create ci --scope tasks:read --scope tasks:write
`)
}

// printCommandUsage writes the usage of a command with verbs.
func printCommandUsage(w io.Writer, c *command) {
	fmt.Fprintf(w, "Usage: synapse %s VERB [flags] [args]\n\n%s.\n\nVerbs:\n", c.name, upperFirst(c.summary))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, v := range c.verbs {
		fmt.Fprintf(tw, "  %s %s\t%s\n", strings.TrimPrefix(v.name, c.name+" "), v.args, v.summary)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nRun 'synapse %s VERB --help' for a verb's flags and examples.\n", c.name)
}

// printVerbUsage writes the usage, flags and examples of a verb.
func printVerbUsage(w io.Writer, s *session, v *verb) {
	fs := newFlagSet("synapse " + v.name)
	if v.agent {
		s.g.register(fs, v.timeout)
	}
	v.setup(fs, s)
	line := "synapse " + v.name
	if v.args != "" {
		line += " " + v.args
	}
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		line += " [flags]"
	}
	fmt.Fprintf(w, "Usage: %s\n\n%s.\n", line, upperFirst(v.summary))
	if v.about != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(v.about))
	}
	if hasFlags {
		fmt.Fprint(w, "\nFlags:\n")
		printFlags(w, fs)
	}
	if len(v.examples) > 0 {
		fmt.Fprint(w, "\nExamples:\n")
		for _, e := range v.examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

// printFlags lists the flags of fs as "--name VALUE  usage (default x)".
func printFlags(w io.Writer, fs *flag.FlagSet) {
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
