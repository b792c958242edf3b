// Package configcmd holds the synapse config command: a configuration file
// checked the way serve reads it, before an agent is started or reloaded
// on it, and the reload of a running agent's file.
package configcmd

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/cli/config"
	"github.com/synapse-edge/synapse/wire"
)

// ConfigVerbs returns the verbs of the config command.
func ConfigVerbs() []*command.Verb {
	return []*command.Verb{checkVerb(), reloadVerb(), keygenVerb(), signVerb()}
}

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

func reloadVerb() *command.Verb {
	return &command.Verb{
		Name: "config reload", Summary: "make the agent read its config file again (as SIGHUP does)",
		About: `Asks the agent (POST /admin/reload, admin token) to read the config file it
was started with again and check all of it. A good file's live fields take
effect at once; the fields that changed but need a restart are listed. A
file with a problem changes nothing, and every problem is printed.

The exit code is 1 when the file was refused, 0 when it was applied.`,
		Examples: []string{"synapse config reload", "synapse config reload --json"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			fs.BoolVar(&s.Flags.JSON, "json", s.Flags.JSON, "print JSON instead of text")
			return func(ctx context.Context, _ []string) error {
				res, err := s.Client().Reload(ctx)
				if err != nil {
					return err
				}
				if s.Flags.JSON {
					if err := s.PrintJSON(res); err != nil {
						return err
					}
				} else if res.Result == wire.ReloadOK {
					fmt.Fprintf(s.IO.Out, "reloaded (config %.16s…)\n", res.ConfigHash)
					fmt.Fprintf(s.IO.Out, "  applied: %s\n", list(res.Applied))
					fmt.Fprintf(s.IO.Out, "  restart required: %s\n", list(res.RestartRequired))
				} else {
					fmt.Fprintf(s.IO.Out, "refused, nothing changed: %d problem(s)\n", len(res.Problems))
					for _, p := range res.Problems {
						fmt.Fprintf(s.IO.Out, "  - %s\n", p)
					}
				}
				if res.Result != wire.ReloadOK {
					return &command.ExitError{Code: command.ExitFailure}
				}
				return nil
			}
		},
	}
}

// list is names joined by commas, or "none".
func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
