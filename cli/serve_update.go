package cli

import (
	"context"
	"log/slog"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/cli/config"
	"github.com/synapse-edge/synapse/cli/reload"
	"github.com/synapse-edge/synapse/cli/remoteupdate"
	"github.com/synapse-edge/synapse/internal/selfupdate"
	"github.com/synapse-edge/synapse/transport/mqtt"
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

// startRemoteUpdate takes update commands from the broker (package
// cli/remoteupdate) when the config has an mqtt section and
// update.operator_keys; the function it returns stops it.
func startRemoteUpdate(ctx context.Context, a *agent.Agent, mq *mqtt.Transport, file config.File, up *selfupdate.Session, log *slog.Logger) (func(), error) {
	if mq == nil || file.Update == nil || len(file.Update.OperatorKeys) == 0 {
		return func() {}, nil
	}
	m, err := remoteupdate.New(remoteupdate.Options{Agent: a, Transport: mq, Config: file.Update, Session: up,
		DataDir: file.DataDir, Version: Version, Logger: log})
	if err != nil {
		return nil, err
	}
	if err := m.Start(ctx); err != nil {
		return nil, err
	}
	return m.Close, nil
}
