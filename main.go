// Command synapse is the Synapse edge agent: one binary that serves the
// agent (synapse serve) and talks to it (synapse task, token, db, ...).
// Run "synapse help" for the commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/synapse-edge/synapse/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
