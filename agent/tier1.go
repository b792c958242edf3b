package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/tier1"
)

// openTier1 builds the routine registry, the ingestor and, when configured,
// the uplink.
func (a *Agent) openTier1() error {
	ds := append([]tier1.Descriptor{tier1.Telemetry()}, a.cfg.Tier1.Routines...)
	reg, err := tier1.NewRegistry(ds...)
	if err != nil {
		return fmt.Errorf("config: tier1.routines: %w", err)
	}
	a.t1 = tier1.NewIngestor(reg, a.db, tier1.IngestConfig{
		MaxInflightBytes: a.cfg.Tier1.MaxInflightBytes,
		Uplink:           a.cfg.Uplink != nil,
		Now:              a.clock.Now,
	})
	c := &a.t1.C
	r := a.metrics
	r.CounterFunc("synapse_tier1_frames_total", "Tier-1 frames stored.", func() float64 { return float64(c.Frames.Load()) })
	r.CounterFunc("synapse_tier1_batches_total", "Tier-1 batches acknowledged (stored or duplicate).", func() float64 { return float64(c.Batches.Load()) })
	r.CounterFunc("synapse_tier1_duplicate_batches_total", "Tier-1 batches acknowledged without storing (batch_id seen).", func() float64 { return float64(c.Duplicates.Load()) })
	r.CounterFunc("synapse_tier1_refused_batches_total", "Tier-1 batches refused.", func() float64 { return float64(c.Refused.Load()) })
	r.CounterFunc("synapse_tier1_bytes_total", "Bytes of tier-1 batches stored.", func() float64 { return float64(c.Bytes.Load()) })
	r.CounterFunc("synapse_tier1_retention_dropped_frames_total", "Tier-1 frames deleted by retention (age or size).", func() float64 { return float64(c.Pruned.Load()) })
	if u := a.cfg.Uplink; u != nil {
		a.uplink = tier1.NewUplink(a.t1, a.db, a.transport, u.Endpoint, u.Token, a.identity.AgentID, a.log.With("component", "uplink"))
		if u.MaxBackoffMS > 0 {
			a.uplink.MaxBackoff = time.Duration(u.MaxBackoffMS) * time.Millisecond
		}
		up := a.uplink
		r.CounterFunc("synapse_tier1_uplink_sent_batches_total", "Batches the upstream acknowledged.", func() float64 { return float64(up.Sent.Load()) })
		r.CounterFunc("synapse_tier1_uplink_failures_total", "Failed attempts to reach the upstream.", func() float64 { return float64(up.Failures.Load()) })
		r.CounterFunc("synapse_tier1_uplink_dropped_batches_total", "Batches the upstream refused for good.", func() float64 { return float64(up.Dropped.Load()) })
		r.GaugeFunc("synapse_tier1_uplink_pending_batches", "Batches waiting to go upstream.", func() float64 { return float64(up.Pending()) })
		r.GaugeFunc("synapse_tier1_uplink_lag_seconds", "Age of the oldest frame waiting to go upstream (by its ts).", func() float64 { return up.Lag().Seconds() })
	}
	return nil
}

// Tier1 is the agent's tier-1 ingestor.
func (a *Agent) Tier1() *tier1.Ingestor { return a.t1 }

// pruneTier1 applies tier-1 retention once.
func (a *Agent) pruneTier1(ctx context.Context) error {
	now := a.clock.Now()
	before := now.Add(-time.Duration(a.cfg.Tier1.RetentionHours) * time.Hour).UnixNano()
	var routines []string
	_ = a.db.View(func(tx *store.Tx) error { routines = tx.T1Routines(); return nil })
	for _, id := range routines {
		for {
			var frames, blocks int
			err := a.db.Update(ctx, func(tx *store.Tx) error {
				var err error
				frames, blocks, err = tx.T1Prune(id, before-tier1.BlockSpan, uint64(a.cfg.Tier1.MaxBytesPerRoutine), 1000, tier1.BlockLen)
				return err
			})
			if err != nil {
				return err
			}
			a.t1.C.Pruned.Add(uint64(frames))
			if blocks < 1000 {
				break
			}
		}
	}
	// Batch ids are remembered for 24 h: a sender retrying later than that
	// would store twice.
	return a.db.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.T1PruneSeen(now.Add(-idemTTL).UnixNano(), 100_000)
		return err
	})
}
