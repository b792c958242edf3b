package agent

import (
	"context"
	"fmt"

	"github.com/synapse-edge/synapse/tier1"
)

// openTier1 builds the routine registry and the ingestor (the command
// builds the exports, package tier1/export).
func (a *Agent) openTier1() error {
	ds := append([]tier1.Descriptor{tier1.Telemetry()}, a.cfg.Load().Tier1.Routines...)
	reg, err := tier1.NewRegistry(ds...)
	if err != nil {
		return fmt.Errorf("config: tier1.routines: %w", err)
	}
	a.t1 = tier1.NewIngestor(reg, a.db, tier1.IngestConfig{
		MaxInflightBytes: a.cfg.Load().Tier1.MaxInflightBytes,
		Uplink:           a.cfg.Load().Uplink != nil,
		Now:              a.clock.Now,
	})
	a.t1.RegisterMetrics(a.metrics)
	if err := a.t1.UseDisk(func() *tier1.Config { return &a.cfg.Load().Tier1 }, a.db.Path(), a.log.With("component", "tier1"), a.metrics); err != nil {
		return fmt.Errorf("tier1 disk budget: %w", err)
	}
	return nil
}

// Tier1 is the agent's tier-1 ingestor.
func (a *Agent) Tier1() *tier1.Ingestor { return a.t1 }

// pruneTier1 applies tier-1 retention once; batch ids are remembered as
// long as idempotency keys.
func (a *Agent) pruneTier1(ctx context.Context) error {
	now := a.clock.Now()
	return a.t1.Prune(ctx, now, a.cfg.Load().Tier1, now.Add(-idemTTL))
}
