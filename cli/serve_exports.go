package cli

import (
	"context"
	"log/slog"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/cli/config"
	"github.com/synapse-edge/synapse/tier1/export"
)

// openExports builds the exports of the file (the uplink section first,
// as the export named uplink) over the open agent's ingestor, store and
// transport, and opens them: nil when there are none. Call it before
// ingest starts (the MQTT southbound, the HTTP server).
func openExports(ctx context.Context, a *agent.Agent, file config.File, log *slog.Logger) (*export.Set, error) {
	list := file.Exports
	if u := file.Uplink; u != nil {
		list = append([]export.Config{export.FromUplink(u)}, list...)
	}
	if len(list) == 0 {
		return nil, nil
	}
	s := export.New(list, export.Options{Ingestor: a.Tier1(), DB: a.Store(), Transport: a.Transport(),
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
