package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/synapse-edge/synapse/a2a"
	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/cli/config"
	"github.com/synapse-edge/synapse/cli/reload"
	"github.com/synapse-edge/synapse/cli/remoteconfig"
	"github.com/synapse-edge/synapse/group"
	"github.com/synapse-edge/synapse/handlers"
	"github.com/synapse-edge/synapse/hil"
	"github.com/synapse-edge/synapse/httpapi"
	"github.com/synapse-edge/synapse/internal/memlimit"
	"github.com/synapse-edge/synapse/internal/selfupdate"
	"github.com/synapse-edge/synapse/internal/tlscert"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/transport/netwire"
	"github.com/synapse-edge/synapse/transport/outbound"
)

const serveUsage = `Usage: synapse serve [--data DIR] [--listen HOST:PORT] [--config FILE] [flags]

Runs an agent: the task engine on an embedded bbolt file in DIR and the HTTP
API on HOST:PORT. The admin bearer token is $SYNAPSE_ADMIN_TOKEN if set (at
least 16 bytes), else the content of DIR/admin.token (created at first start,
mode 0600).

Configuration is read in this order: defaults, the JSON config file, SYNAPSE_*
environment variables, then these flags.

SIGTERM or SIGINT stops accepting requests, lets running tasks finish for
--grace, closes streams and the store, and exits 0. SIGHUP (or POST
/admin/reload) reads the config file again: a good file's live fields take
effect at once, a bad one changes nothing (README: Reloading without a
restart). SIGUSR2 restarts into the binary in place (after synapse update;
README: Updating).

Examples:
  synapse serve
  synapse serve --data /var/lib/synapse --listen 0.0.0.0:8080 --config /etc/synapse.json
  SYNAPSE_ADMIN_TOKEN=$(openssl rand -hex 16) synapse serve --data ./d1 --listen 127.0.0.1:9001

Flags:
`

// runServe is the serve command.
func runServe(ctx context.Context, sio *command.IO, args []string) error {
	fs := command.NewFlagSet("serve")
	data := fs.String("data", "", "data `DIR` (default ./data)")
	listen := fs.String("listen", "", "`HOST:PORT` to listen on (default 127.0.0.1:8080)")
	configFile := fs.String("config", "", "JSON config `FILE`")
	endpoint := fs.String("endpoint", "", "base `URL` peers use to reach this agent (default http://LISTEN)")
	logLevel := fs.String("log-level", "info", "`LEVEL`: debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "`FORMAT` of the log on standard error: text or json")
	grace := fs.Duration("grace", 20*time.Second, "`DURATION` running tasks may take to finish on shutdown")
	extra := addExtraFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(sio.Out, serveUsage)
			command.PrintFlags(sio.Out, fs)
			return nil
		}
		if strings.Contains(err.Error(), "-grpc-listen") {
			fmt.Fprintf(sio.Err, "synapse serve: --grpc-listen needs the gRPC build: make build-grpc gives bin/synapse-grpc, which has it (this binary serves REST, SSE and WebSocket only)\n")
			return command.ErrUsage
		}
		fmt.Fprintf(sio.Err, "synapse serve: %v\n\n%s", err, serveUsage)
		command.PrintFlags(sio.Err, fs)
		return command.ErrUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(sio.Err, "synapse serve: unexpected argument %q\n", fs.Arg(0))
		return command.ErrUsage
	}
	level := new(slog.LevelVar)
	log, err := newLogger(sio, level, *logLevel, *logFormat)
	if err != nil {
		fmt.Fprintf(sio.Err, "synapse serve: %v\n", err)
		return command.ErrUsage
	}
	levelFlag := false
	fs.Visit(func(f *flag.Flag) { levelFlag = levelFlag || f.Name == "log-level" })

	file, hash, err := config.LoadHashed(*configFile, os.Getenv)
	if err != nil {
		return err
	}
	if err := config.CheckAdminToken(file.AdminToken); err != nil {
		return err
	}
	// The flags win over the file, at start and at every reload.
	flags := func(f *config.File) {
		if *data != "" {
			f.DataDir = *data
		}
		if *listen != "" {
			f.Listen = *listen
		}
		if *endpoint != "" {
			f.Endpoint = *endpoint
		}
	}
	flags(&file)
	st := remoteconfig.AtStart(*configFile, file, hash, flags, os.Getenv, log)
	file, hash = st.File, st.Hash
	if lv, ok := file.Level(); ok && !levelFlag {
		level.Set(lv)
	}
	var rl *reload.Options
	if *configFile != "" {
		rl = &reload.Options{Path: *configFile, Hash: hash, Running: file, Flags: flags, Level: level, LevelFlag: levelFlag,
			Overlay: st.Overlay, OverlayVersion: st.Version}
	}
	return serveUpdating(ctx, sio, log, file, *grace, extra, rl)
}

// serve runs the agent of the configuration file: each package gets its
// own section.
func serve(ctx context.Context, sio *command.IO, log *slog.Logger, file config.File, grace time.Duration, extra *extraServers, ropts *reload.Options, up *selfupdate.Session) error {
	budgets, undoLimit := applyMemoryBudget(&file, log)
	defer undoLimit()
	cfg := file.Config
	var tlsSrv *tlscert.Server
	if file.TLS.Enabled() {
		var err error
		if tlsSrv, err = tlscert.NewServer(file.TLS, log); err != nil {
			return err
		}
		if cfg.Endpoint == "" {
			cfg.Endpoint = "https://" + cfg.Listen
		}
	}
	roots, err := file.TLS.PeerRoots()
	if err != nil {
		return err
	}
	pol, err := outbound.New(cfg.Outbound, cfg.Listen)
	if err != nil {
		return fmt.Errorf("config: outbound.allow: %w", err)
	}
	wires := netwire.New(netwire.Options{RootCAs: roots, Guard: pol.DialContext})
	defer wires.Close() // after the agent, which sends through it
	t1, err := newTier1(file, cfg, log)
	if err != nil {
		return err
	}
	a, err := agent.New(cfg, agent.Options{Logger: log, Transport: wires, Outbound: pol, Tier1: t1})
	if err != nil {
		return err
	}
	if err := handlers.Register(a, handlers.Options{Config: file.Handlers, Logger: log}); err != nil {
		return err
	}
	nw, err := peer.New(a, peer.Options{Logger: log, Config: &file.P2P, Registry: file.Registry})
	if err != nil {
		return err
	}
	mq, err := addMQTT(a, file.MQTT, log)
	if err != nil {
		return err
	}
	if mq != nil {
		defer mq.Close(context.Background()) // after the agent, whose uplink sends through it
	}
	a2aw, err := newA2AWire(a, file.A2A, log)
	if err != nil {
		return err
	}
	if err := a.Open(ctx); err != nil {
		if errors.Is(err, store.ErrLocked) {
			return fmt.Errorf("data directory %s is in use by another synapse process (is an agent already serving it?)", cfg.DataDir)
		}
		return err
	}
	exports, err := openExports(ctx, a, t1, file, log)
	if err != nil {
		_ = a.Close(context.Background())
		return err
	}
	stopExports := runExports(exports)
	if err := a2aw.Start(ctx, a2a.NewLedger(a.Store())); err != nil {
		stopExports()
		_ = a.Close(context.Background())
		return err
	}
	if err := startMQTT(ctx, a, nw, mq, t1, file.MQTT, log); err != nil {
		stopExports()
		_ = a.Close(context.Background())
		return err
	}
	stopUpdates, err := startRemoteUpdate(ctx, a, mq, file, up, log)
	if err != nil {
		_ = a.Close(context.Background())
		return err
	}
	defer stopUpdates()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		stopExports()
		_ = a.Close(context.Background())
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	hm := hil.New(a, hil.Options{Logger: log, Config: file.HIL, CallbackSecret: file.P2P.CallbackSecret})
	if err := hm.Start(ctx); err != nil {
		_ = ln.Close()
		stopExports()
		_ = a.Close(context.Background())
		return fmt.Errorf("start human-in-the-loop: %w", err)
	}
	gm := group.New(a, nw, group.Options{Logger: log})
	if err := gm.Start(ctx); err != nil {
		_ = hm.Close(context.Background())
		_ = ln.Close()
		stopExports()
		_ = a.Close(context.Background())
		return fmt.Errorf("start groups: %w", err)
	}
	stopExtra, err := extra.start(ctx, a, nw, gm, tlsSrv, log)
	if err != nil {
		_, _, _ = gm.Close(context.Background()), hm.Close(context.Background()), ln.Close()
		stopExports()
		_ = a.Close(context.Background())
		return err
	}
	hopts := httpapi.Options{Logger: log, Version: Version, HIL: hm, Groups: gm, Network: nw, Limits: file.HTTP,
		Tier1: t1, Tier1ReadAhead: budgets.Tier1ReadAhead}
	if exports != nil {
		hopts.Exports = exports
	}
	scheme := "http"
	if tlsSrv != nil {
		hopts.TLS = tlsSrv.TLS
		if tlsSrv.Clients != nil {
			hopts.ClientCerts = tlsSrv.Clients
		}
		scheme = "https"
	}
	var rl *reload.Reloader
	if ropts != nil {
		o := *ropts
		o.Tier1 = t1
		if exports != nil {
			o.SetExportCaps = exports.SetCaps
		}
		rl = reload.New(a, log, o)
		hopts.Reloader = rl
	}
	if file.RemoteConfig != nil && rl != nil && mq != nil {
		rc, err := remoteconfig.New(remoteconfig.Options{Agent: a, Reloader: rl, Transport: mq, Config: file.RemoteConfig, DataDir: cfg.DataDir, Logger: log})
		if err == nil {
			err = rc.Start(ctx)
		}
		if err != nil {
			_, _, _ = stopExtra(context.Background()), gm.Close(context.Background()), hm.Close(context.Background())
			_, _ = ln.Close(), a.Close(context.Background())
			return err
		}
		defer rc.Close(context.Background()) // before the transport's Close
	}
	srv := httpapi.New(a, hopts)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	up.Watch(ctx, a.Serving) // a binary on trial: SERVING in time, or rolled back
	stopHUP := reload.WatchSIGHUP(ctx, rl, log)
	defer stopHUP()

	id := a.Identity()
	tokenHint := "$SYNAPSE_ADMIN_TOKEN"
	if cfg.AdminToken == "" {
		tokenHint = filepath.Join(cfg.DataDir, agent.AdminTokenFile)
	}
	if tlsSrv != nil {
		leaf := tlsSrv.Source.Leaf()
		log.Info("tls", "cert_file", file.TLS.CertFile, "fingerprint", tlscert.Fingerprint(leaf),
			"not_after", leaf.NotAfter.UTC().Format(time.RFC3339), "client_auth", file.TLS.ClientAuth)
	}
	log.Info("serving", "agent_id", id.AgentID, "scheme", scheme, "listen", ln.Addr().String(), "data", cfg.DataDir, "admin_token", tokenHint)
	trim := memlimit.NewTrimmer(memlimit.TrimOptions{})
	trim.Start(ctx)
	defer trim.Close(context.Background())

	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down", "grace", grace)
	case serveErr = <-served:
	}
	if mq != nil {
		// Offline on the broker as the stop begins, not once the running
		// tasks have finished (the connection stays for their answers).
		mq.Leave(context.Background())
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("http shutdown", "err", err)
	}
	if err := stopExtra(sctx); err != nil {
		log.Warn("extra servers shutdown", "err", err)
	}
	if err := gm.Close(sctx); err != nil {
		log.Warn("groups shutdown", "err", err)
	}
	if err := hm.Close(sctx); err != nil {
		log.Warn("human-in-the-loop shutdown", "err", err)
	}
	if err := a2aw.Close(sctx); err != nil {
		log.Warn("a2a wire shutdown", "err", err)
	}
	stopExports()
	if err := a.Close(sctx); err != nil {
		return fmt.Errorf("close agent: %w", err)
	}
	log.Info("stopped")
	return serveErr
}

// applyMemoryBudget sets the runtime's soft memory limit from the memory
// budget (unless a lower one is set: GOMEMLIMIT) until undo, and returns
// the budgets it derives.
func applyMemoryBudget(file *config.File, log *slog.Logger) (memlimit.Budgets, func()) {
	b := file.Limits.Budgets()
	undo := memlimit.Apply(b)
	log.Debug("memory budget", "memory_mb", file.Limits.MB(), "soft_limit_bytes", debug.SetMemoryLimit(-1),
		"tier1_inflight_bytes", file.Tier1.MaxInflightBytes, "tier1_read_ahead", b.Tier1ReadAhead)
	return b, undo
}

// readableDuration writes a duration in the JSON log as the text log
// does, as time.Duration's String ("20s", "1.5s", "350ms"), not as a
// number of nanoseconds.
func readableDuration(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}

// newLogger returns the log on standard error at the level of lv, which
// it sets to level (a reload may change it later).
func newLogger(sio *command.IO, lv *slog.LevelVar, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	lv.Set(l)
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(sio.Err, opts)), nil
	case "json":
		opts.ReplaceAttr = readableDuration
		return slog.New(slog.NewJSONHandler(sio.Err, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", format)
}
