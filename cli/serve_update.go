package cli

import (
	"context"
	"log/slog"
	"time"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/cli/config"
	"github.com/synapse-edge/synapse/cli/reload"
	"github.com/synapse-edge/synapse/internal/selfupdate"
)

// serveUpdating runs serve inside a self-update session: a binary on
// trial is watched, rolled back when it fails, and an update or SIGUSR2
// restarts the process (exec, or exit 75 for the service manager).
func serveUpdating(ctx context.Context, sio *command.IO, log *slog.Logger, file config.File, grace time.Duration, extra *extraServers, rl *reload.Options) error {
	up, err := selfupdate.Begin(selfupdate.Options{Version: Version, Config: file.Update, Log: log})
	if err == nil && !up.Restarting() {
		err = serve(up.Context(ctx), sio, log, file, grace, extra, rl, up)
	}
	code, err := up.End(err)
	if code == selfupdate.ExitRestart {
		return &command.ExitError{Code: code}
	}
	return err
}
