package handlers

import (
	"fmt"
	"log/slog"
	"os/exec"
	"time"

	"github.com/synapse-edge/synapse/agent"
)

// Options are what Register adds handlers with.
type Options struct {
	// Config is the config file's handlers; the zero value registers the
	// built-in ones only.
	Config Config
	// Logger receives the warnings about commands that cannot run; nil:
	// none.
	Logger *slog.Logger
}

// Register validates opts.Config and adds its handlers to a (before a
// opens): the built-in ones unless DisableBuiltins, each command, then
// natural_language unless DisableBuiltins or a command is configured
// for that task type.
func Register(a *agent.Agent, opts Options) error {
	c := opts.Config
	if err := c.Validate(); err != nil {
		return err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !c.DisableBuiltins {
		for _, h := range builtins() {
			if err := a.Handle(h); err != nil {
				return err
			}
		}
	}
	for i, cmd := range c.Commands {
		if err := a.Handle(command(cmd, time.Duration(a.Config().MaxTaskDurationSeconds)*time.Second)); err != nil {
			return fmt.Errorf("config: handlers: %w", err)
		}
		// A program that is not there now fails every task of its type
		// until it is installed: say so at start, not at the first task.
		if _, err := exec.LookPath(cmd.Command[0]); err != nil {
			log.Warn("a handler's command cannot run; its tasks will fail until it can",
				"field", fmt.Sprintf("handlers[%d].command", i), "task_type", cmd.TaskType, "command", cmd.Command[0], "err", err)
		}
	}
	if c.DisableBuiltins || a.SupportsTaskType(NaturalLanguageType) {
		return nil
	}
	return a.Handle(naturalLanguage(a))
}
