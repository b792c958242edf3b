// Package handlers holds the task types an agent is given by its
// configuration rather than by Go code: the built-in diagnostics (echo,
// sleep, confirm), tier-3 natural_language, and external commands (SPEC
// §5.4: the payload on stdin, the JSON result on stdout, stderr lines as
// log and progress events, the process group killed on cancel or
// timeout). The engine (package agent) runs handlers; this package only
// makes them and registers them:
//
//	a, err := agent.New(cfg, agent.Options{Logger: log})
//	err = handlers.Register(a, handlers.Options{Config: file.Handlers, Logger: log})
//	err = a.Open(ctx)
//
// Config is the handlers' part of the config file (its top-level keys
// disable_builtins and handlers); package cli/config reads it.
package handlers
