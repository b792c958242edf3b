// Package reload reads a running agent's config file again, on SIGHUP or
// POST /admin/reload, checks all of it as synapse config check does, and
// applies at once what a running agent can take (LiveFields); the fields that need a restart are named and keep their
// running values. A file with a problem changes nothing. serve wires it
// (package cli); /health and /metrics show its outcome.
package reload

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/cli/config"
	"github.com/synapse-edge/synapse/internal/metrics"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/tier1/export"
	"github.com/synapse-edge/synapse/wire"
)

// LiveFields are the config file's fields a reload applies: log_level,
// the agent's fields it reads at each use (agent.Reconfigure), tier 1's
// (tier1.Service.SetConfig) and the exports' caps.
var LiveFields = []string{
	"log_level", "max_concurrent_tasks", "max_task_duration_seconds", "max_parked_tasks", "approvals",
	"tier1.retention_hours", "tier1.max_bytes_per_routine",
	"tier1.export_bandwidth_bytes_per_s", "exports[].bandwidth_bytes_per_s",
}

// live returns cur with the agent's live values of next.
func live(cur, next agent.Config) agent.Config {
	cur.MaxConcurrentTasks = next.MaxConcurrentTasks
	cur.MaxTaskDurationSeconds = next.MaxTaskDurationSeconds
	cur.MaxParkedTasks = next.MaxParkedTasks
	cur.Approvals = slices.Clone(next.Approvals)
	return cur
}

// liveTier1 returns cur, a tier1 section, with the live values of next.
func liveTier1(cur, next tier1.Config) tier1.Config {
	cur.RetentionHours = next.RetentionHours
	cur.MaxBytesPerRoutine = next.MaxBytesPerRoutine
	cur.ExportBandwidthBytesPerS = next.ExportBandwidthBytesPerS
	return cur
}

// liveExports is cur with the caps (bandwidth_bytes_per_s) of next's
// exports of the same name; an export added, removed or otherwise
// changed is a difference that needs a restart.
func liveExports(cur, next []export.Config) []export.Config {
	out := slices.Clone(cur)
	for i := range out {
		for _, n := range next {
			if n.Name == out[i].Name {
				out[i].BandwidthBytesPerS = n.BandwidthBytesPerS
			}
		}
	}
	return out
}

// Options are what a Reloader is built with.
type Options struct {
	// Path is the config file serve started with.
	Path string
	// Hash is the SHA-256 (hex) of the file's bytes it started with
	// (config.LoadHashed).
	Hash string
	// Running is the configuration serve started with, its flags
	// applied.
	Running config.File
	// Flags applies serve's command-line flags, which win over the file
	// at a reload as at start; nil: none.
	Flags func(*config.File)
	// Level is the log's level; a reload sets it from log_level unless
	// LevelFlag (--log-level was given, and wins over the file).
	Level     *slog.LevelVar
	LevelFlag bool
	// Getenv reads the environment, as at start; nil: os.Getenv.
	Getenv func(string) string
	// Overlay is the remote config fragment serve started with, decoded
	// over the file at each reload (config.ReadOverlaid); nil: none.
	// OverlayVersion is its version, shown in Status.
	Overlay        []byte
	OverlayVersion uint64
	// SetExportCaps, if set, applies the exports' bandwidth caps
	// (export.Set.SetCaps): the global one and each export's by name.
	SetExportCaps func(global int64, caps map[string]int64)
	// Tier1, if set, is the tier-1 service serve runs: a reload sets its
	// live fields (retention_hours, max_bytes_per_routine).
	Tier1 *tier1.Service
}

// Reloader owns the config file of a running serve. Its methods are
// safe for concurrent use; reloads run one at a time.
type Reloader struct {
	path      string
	flags     func(*config.File)
	level     *slog.LevelVar
	levelFlag bool
	getenv    func(string) string
	caps      func(global int64, caps map[string]int64)
	t1        *tier1.Service

	a   *agent.Agent
	log *slog.Logger
	m   reloadMetrics

	mu      sync.Mutex // serialises reloads; guards what follows
	running config.File
	hash    string
	overlay []byte
	version uint64 // the overlay's
	last    *wire.ReloadResult
}

type reloadMetrics struct {
	total   *metrics.CounterVec
	success *metrics.Gauge
	hash    *metrics.Info
}

// New returns the reloader of the file opts.Path for the agent a, which
// serve started with it, and registers its metrics on a's registry; log
// gets a line for every reload.
func New(a *agent.Agent, log *slog.Logger, opts Options) *Reloader {
	r := &Reloader{path: opts.Path, hash: opts.Hash, running: opts.Running, flags: opts.Flags, level: opts.Level,
		levelFlag: opts.LevelFlag, getenv: opts.Getenv, caps: opts.SetExportCaps, t1: opts.Tier1, overlay: opts.Overlay, version: opts.OverlayVersion, a: a, log: log.With("component", "config")}
	if r.flags == nil {
		r.flags = func(*config.File) {}
	}
	if r.getenv == nil {
		r.getenv = os.Getenv
	}
	if r.level == nil {
		r.level = new(slog.LevelVar)
	}
	reg := a.Metrics()
	r.m = reloadMetrics{
		total:   reg.CounterVec("synapse_config_reload_total", "Reloads of the config file (SIGHUP, POST /admin/reload), by result: ok or invalid.", "result"),
		success: reg.Gauge("synapse_config_last_reload_success_timestamp_seconds", "Unix time of the last reload that applied the file (0: none since start)."),
		hash:    reg.Info("synapse_config_info", "The config file in force: the SHA-256 of its bytes.", "hash"),
	}
	r.m.hash.Set(r.hash)
	return r
}

// Status is the file in force and the last reload (httpapi.Reloader).
func (r *Reloader) Status() *wire.ConfigStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := &wire.ConfigStatus{File: r.path, Hash: r.hash, RemoteVersion: r.version}
	if r.last != nil {
		last := *r.last
		st.LastReload = &last
	}
	return st
}

// Reload reads the file again, checks all of it and applies its live
// values, or nothing when it has a problem (httpapi.Reloader).
func (r *Reloader) Reload(_ context.Context, trigger string) wire.ReloadResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.finish(r.reload(trigger, r.overlay, nil))
}

// Overlay reloads the file with fragment, a remote config fragment of
// the version given,
// decoded over it in place of the one in force (Options.Overlay): when
// the whole is good, commit runs (it stores the fragment), then the live
// values are applied and the fragment is the one every later reload
// decodes over the file. A bad whole, or commit's error, changes nothing.
func (r *Reloader) Overlay(_ context.Context, trigger string, version uint64, fragment []byte, commit func() error) wire.ReloadResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := r.reload(trigger, fragment, commit)
	if res.Result == wire.ReloadOK {
		r.overlay, r.version = fragment, version
	}
	return r.finish(res)
}

// finish records res, the outcome of a reload, with r.mu held.
func (r *Reloader) finish(res wire.ReloadResult) wire.ReloadResult {
	r.last = &res
	r.m.total.With(res.Result).Add(1)
	if res.Result == wire.ReloadOK {
		r.m.success.Set(float64(res.Time.UnixNano()) / 1e9)
		r.m.hash.Set(r.hash)
	}
	return res
}

// reload reads the file with overlay over it, with r.mu held; commit
// (nil: none) runs once the whole is known good, before it is applied.
func (r *Reloader) reload(trigger string, overlay []byte, commit func() error) wire.ReloadResult {
	res := wire.ReloadResult{Time: time.Now().UTC(), Trigger: trigger, Problems: []string{}, Applied: []string{}, RestartRequired: []string{}}
	next, hash, errs := config.ReadOverlaid(r.path, overlay, r.getenv)
	res.ConfigHash = hash
	refuse := func(errs ...error) wire.ReloadResult {
		res.Result = wire.ReloadInvalid
		for _, err := range errs {
			res.Problems = append(res.Problems, err.Error())
		}
		r.log.Error("config reload refused: nothing changed", "trigger", trigger, "file", r.path,
			"problems", len(res.Problems), "problem", strings.Join(res.Problems, "; "))
		return res
	}
	if len(errs) > 0 {
		return refuse(errs...)
	}
	r.flags(&next)
	// What is in force after the reload: the running values, with the
	// live ones of the file; every other difference needs a restart.
	applied := r.running
	applied.Config = live(r.running.Config, next.Config)
	applied.Tier1 = liveTier1(r.running.Tier1, next.Tier1)
	applied.LogLevel = next.LogLevel
	applied.Exports = liveExports(r.running.Exports, next.Exports)
	restart, err := config.ChangedFields(applied, next)
	if err != nil {
		return refuse(err)
	}
	changed, err := config.ChangedFields(r.running, applied)
	if err != nil {
		return refuse(err)
	}
	if commit != nil {
		if err := commit(); err != nil {
			return refuse(err)
		}
	}
	// The agent runs with its own copy: the running values (serve set
	// some of them, such as the endpoint under TLS), the live ones of
	// the file.
	r.a.Reconfigure(live(r.a.Config(), next.Config))
	if r.t1 != nil {
		r.t1.SetConfig(liveTier1(r.t1.Config(), next.Tier1))
	}
	if r.caps != nil {
		caps := map[string]int64{}
		for _, e := range applied.Exports {
			caps[e.Name] = e.BandwidthBytesPerS
		}
		r.caps(applied.Tier1.ExportBandwidthBytesPerS, caps)
	}
	if lv, ok := next.Level(); !r.levelFlag {
		if !ok {
			lv = slog.LevelInfo
		}
		r.level.Set(lv)
	} else if i := slices.Index(changed, "log_level"); i >= 0 {
		changed = slices.Delete(changed, i, i+1)
		r.log.Warn("config reload: log_level is set by --log-level, which wins over the file", "log_level", next.LogLevel, "in_force", r.level.Level().String())
	}
	r.running, r.hash = applied, hash
	res.Result = wire.ReloadOK
	res.Applied, res.RestartRequired = append(res.Applied, changed...), append(res.RestartRequired, restart...)
	if len(restart) > 0 {
		r.log.Warn("config reload: these fields changed but need a restart; they keep their running values", "trigger", trigger,
			"restart_required", strings.Join(restart, ","))
	}
	r.log.Info("config reloaded", "trigger", trigger, "file", r.path, "hash", hash, "applied", strings.Join(changed, ","),
		"restart_required", len(restart))
	return res
}

// WatchSIGHUP reloads rl on every SIGHUP until ctx ends (without a
// config file, rl nil, it logs that there is nothing to reload: the
// signal never stops the agent); the returned function stops it and
// waits for a reload under way.
func WatchSIGHUP(ctx context.Context, rl *Reloader, log *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if rl == nil {
					log.Warn("SIGHUP: serve was started without --config: there is no file to reload")
					continue
				}
				rl.Reload(ctx, "sighup")
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		cancel()
		<-done
	}
}
