package cli

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/cli/config"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/tier1/export"
)

// newTier1 builds tier 1 of the file (its tier1 section, the uplink's
// export log) for the agent of cfg, which opens and prunes it; cfg and
// the sections are checked first, with every problem agent.New would
// name (config.File.ValidateAgent).
func newTier1(file config.File, cfg agent.Config, log *slog.Logger) (*tier1.Service, error) {
	if err := file.ValidateAgent(cfg); err != nil {
		return nil, err
	}
	t1, err := tier1.NewService(file.Tier1, tier1.ServiceOptions{Uplink: file.Uplink != nil,
		Logger: log.With("component", "tier1"), SeenFor: agent.IdempotencyTTL})
	if err != nil {
		return nil, fmt.Errorf("config: tier1.routines: %w", err)
	}
	return t1, nil
}

// openExports builds the exports of the file (the uplink section first,
// as the export named uplink) over the open agent's tier-1 ingestor,
// store and transport, and opens them: nil when there are none. Call it
// before ingest starts (the MQTT southbound, the HTTP server).
func openExports(ctx context.Context, a *agent.Agent, t1 *tier1.Service, file config.File, log *slog.Logger) (*export.Set, error) {
	list := file.Exports
	if u := file.Uplink; u != nil {
		list = append([]export.Config{export.FromUplink(u)}, list...)
	}
	if len(list) == 0 {
		return nil, nil
	}
	s := export.New(list, export.Options{Ingestor: t1.Ingestor(), DB: a.Store(), Transport: a.Transport(),
		Source: a.Identity().AgentID, BandwidthBytesPerS: file.Tier1.ExportBandwidthBytesPerS,
		Logger: log.With("component", "export")})
	if err := s.Open(ctx); err != nil {
		return nil, err
	}
	s.RegisterMetrics(a.Metrics())
	return s, nil
}

// runExports runs s until the returned stop is called (which waits for
// the sends under way to end).
func runExports(s *export.Set) (stop func()) {
	if s == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	return func() { cancel(); <-done }
}
