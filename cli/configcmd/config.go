// Package configcmd holds the synapse config command: a configuration file
// checked the way serve reads it, before an agent is started or reloaded
// on it.
package configcmd

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/cli/config"
)

// ConfigVerbs returns the verbs of the config command.
func ConfigVerbs() []*command.Verb { return []*command.Verb{checkVerb()} }

// checkResult is the output of config check.
type checkResult struct {
	File     string   `json:"file"`
	OK       bool     `json:"ok"`
	Problems []string `json:"problems"`
}

func checkVerb() *command.Verb {
	return &command.Verb{
		Name: "config check", Args: "FILE", MinArgs: 1, MaxArgs: 1,
		Summary: "check a config file: every problem serve would refuse it for",
		About: `Reads FILE and the environment (SYNAPSE_* variables and the variables the
file names for its secrets) the way serve does, and prints every problem:
unknown or misspelt keys and JSON syntax (with line and column; nothing
after a syntax error can be read), then every bad value of every section.
Nothing is started and no data directory is touched.

The exit code is 1 when there is a problem, 0 when the file is good.`,
		Examples: []string{
			"synapse config check /etc/synapse/config.json",
			"synapse config check --json config.json",
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			fs.BoolVar(&s.Flags.JSON, "json", s.Flags.JSON, "print JSON instead of text")
			return func(_ context.Context, args []string) error {
				res := checkResult{File: args[0], Problems: []string{}}
				for _, err := range config.Check(args[0], os.Getenv) {
					res.Problems = append(res.Problems, err.Error())
				}
				res.OK = len(res.Problems) == 0
				if s.Flags.JSON {
					if err := s.PrintJSON(res); err != nil {
						return err
					}
				} else if res.OK {
					fmt.Fprintf(s.IO.Out, "%s: ok\n", res.File)
				} else {
					fmt.Fprintf(s.IO.Out, "%s: %d problem(s)\n", res.File, len(res.Problems))
					for _, p := range res.Problems {
						fmt.Fprintf(s.IO.Out, "  - %s\n", p)
					}
				}
				if !res.OK {
					return &command.ExitError{Code: command.ExitFailure}
				}
				return nil
			}
		},
	}
}
