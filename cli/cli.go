// Package cli is the root of the synapse command line: the command table,
// the dispatch of a command line to its verb, help and version, and the
// serve command, which wires and runs an agent. The other commands talk to
// a running agent over its REST API or work on its data directory; they
// live in packages of their own (cli/taskcmd, cli/admincmd, cli/tier1cmd,
// cli/peercmd, cli/groupcmd, cli/hilcmd) written against the framework in
// cli/command.
//
// # Shape
//
//	synapse [global flags] COMMAND [VERB] [flags] [args]
//
// Every command and verb answers --help (or -h) with its usage and
// examples on standard output. Flags may follow positional arguments; "--"
// ends the flags.
//
// # Exit codes
//
// 0 success; 1 a runtime error (the agent refused, the network failed, a
// watched or awaited task ended other than completed, a check found
// errors); 2 a usage error (unknown command or verb, bad flag, wrong
// number of arguments, invalid input).
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/synapse-edge/synapse/cli/command"
)

// Version is the version the binary reports; the Makefile sets it with
// -ldflags "-X github.com/synapse-edge/synapse/cli.Version=...".
var Version = "dev"

// Exit codes of Main.
const (
	ExitOK      = command.ExitOK
	ExitFailure = command.ExitFailure
	ExitUsage   = command.ExitUsage
)

// Main runs the synapse command line with args (without the program name,
// i.e. os.Args[1:]) and returns the process exit code. It reads the
// environment variables SYNAPSE_AGENT, SYNAPSE_TOKEN and
// SYNAPSE_ADMIN_TOKEN. Cancelling ctx (on SIGINT or SIGTERM) stops the
// running command.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(ctx, &command.IO{In: stdin, Out: stdout, Err: stderr}, args, os.Getenv)
}

// run is Main with the environment passed in.
func run(ctx context.Context, sio *command.IO, args []string, getenv func(string) string) int {
	s := command.NewSession(sio, getenv, Version)
	top := command.NewFlagSet("synapse")
	s.RegisterGlobals(top, 0)
	showVersion := top.Bool("version", false, "print the version and exit")
	if err := top.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printMainUsage(sio.Out, s)
			return ExitOK
		}
		fmt.Fprintf(sio.Err, "synapse: %v\n\n", err)
		printMainUsage(sio.Err, s)
		return ExitUsage
	}
	if *showVersion {
		printVersion(sio.Out)
		return ExitOK
	}
	rest := top.Args()
	if len(rest) == 0 {
		printMainUsage(sio.Err, s)
		return ExitUsage
	}
	name, rest := rest[0], rest[1:]
	if name == "help" {
		return runHelp(ctx, s, rest)
	}
	cmd := findCommand(name)
	if cmd == nil {
		fmt.Fprintf(sio.Err, "synapse: unknown command %q\n\n", name)
		printMainUsage(sio.Err, s)
		return ExitUsage
	}
	if cmd.Name == "serve" {
		// Global flags given before "serve" go to serve's own parser.
		return s.ExitCode(nil, runServe(ctx, sio, append(topFlagArgs(args, len(top.Args())), rest...)))
	}
	if cmd.Leaf != nil {
		return s.Run(ctx, cmd.Leaf, rest)
	}
	if len(rest) == 0 {
		fmt.Fprintf(sio.Err, "synapse %s: missing verb\n\n", cmd.Name)
		command.PrintCommandUsage(sio.Err, cmd)
		return ExitUsage
	}
	switch rest[0] {
	case "-h", "-help", "--help", "help":
		command.PrintCommandUsage(sio.Out, cmd)
		return ExitOK
	}
	v := cmd.Find(rest[0])
	if v == nil {
		fmt.Fprintf(sio.Err, "synapse %s: unknown verb %q\n\n", cmd.Name, rest[0])
		command.PrintCommandUsage(sio.Err, cmd)
		return ExitUsage
	}
	return s.Run(ctx, v, rest[1:])
}

// topFlagArgs returns the global flag arguments that came before the
// command: args without the command and what followed it.
func topFlagArgs(args []string, remaining int) []string {
	return append([]string(nil), args[:len(args)-remaining]...)
}

// runHelp prints the usage of the named command or verb.
func runHelp(ctx context.Context, s *command.Session, args []string) int {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help":
			fmt.Fprintln(s.IO.Out, "Usage: synapse help [COMMAND [VERB]]")
			fmt.Fprintln(s.IO.Out, "\nPrints the usage of synapse, of a command or of a verb (as COMMAND VERB --help does).")
			fmt.Fprintln(s.IO.Out, "\nExamples:\n  synapse help\n  synapse help task\n  synapse help task submit")
			return ExitOK
		}
	}
	switch len(args) {
	case 0:
		printMainUsage(s.IO.Out, s)
		return ExitOK
	case 1, 2:
		cmd := findCommand(args[0])
		if cmd == nil {
			fmt.Fprintf(s.IO.Err, "synapse help: unknown command %q\n\n", args[0])
			printMainUsage(s.IO.Err, s)
			return ExitUsage
		}
		if cmd.Name == "serve" {
			return s.ExitCode(nil, runServe(ctx, s.IO, []string{"--help"}))
		}
		if cmd.Leaf != nil && len(args) == 1 {
			s.PrintVerbUsage(s.IO.Out, cmd.Leaf)
			return ExitOK
		}
		if len(args) == 1 {
			command.PrintCommandUsage(s.IO.Out, cmd)
			return ExitOK
		}
		v := cmd.Find(args[1])
		if v == nil {
			fmt.Fprintf(s.IO.Err, "synapse help: unknown verb %q of %s\n\n", args[1], cmd.Name)
			command.PrintCommandUsage(s.IO.Err, cmd)
			return ExitUsage
		}
		s.PrintVerbUsage(s.IO.Out, v)
		return ExitOK
	}
	fmt.Fprintln(s.IO.Err, "synapse help: too many arguments")
	fmt.Fprintln(s.IO.Err, "Usage: synapse help [COMMAND [VERB]]")
	return ExitUsage
}

// printVersion writes "synapse <version> <goos>/<goarch> <go version>".
func printVersion(w io.Writer) {
	fmt.Fprintf(w, "synapse %s %s/%s %s\n", Version, runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// versionVerb returns the version command.
func versionVerb() *command.Verb {
	return &command.Verb{
		Name:     "version",
		Summary:  "print the version, platform and Go version",
		Examples: []string{"synapse version"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			return func(ctx context.Context, args []string) error {
				printVersion(s.IO.Out)
				return nil
			}
		},
	}
}
