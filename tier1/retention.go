package tier1

import (
	"context"
	"time"

	"github.com/synapse-edge/synapse/internal/metrics"
	"github.com/synapse-edge/synapse/store"
)

// pruneBatch bounds the blocks one retention transaction deletes, so that
// retention never holds the store's writer for long.
const pruneBatch = 1000

// Prune applies retention once: each routine's frames older than
// c.RetentionHours (by their ts) and its oldest beyond
// c.MaxBytesPerRoutine, then the batch ids seen before seenBefore (a
// sender retrying later than that would store twice).
func (in *Ingestor) Prune(ctx context.Context, now time.Time, c Config, seenBefore time.Time) error {
	before := now.Add(-c.Retention()).UnixNano()
	var routines []string
	_ = in.db.View(func(tx *store.Tx) error { routines = tx.T1Routines(); return nil })
	for _, id := range routines {
		for {
			var frames, blocks int
			err := in.db.Update(ctx, func(tx *store.Tx) error {
				var err error
				frames, blocks, err = tx.T1Prune(id, before-BlockSpan, uint64(c.MaxBytesPerRoutine), pruneBatch, BlockLen)
				return err
			})
			if err != nil {
				return err
			}
			in.C.Pruned.Add(uint64(frames))
			if blocks < pruneBatch {
				break
			}
		}
	}
	return in.db.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.T1PruneSeen(seenBefore.UnixNano(), 100_000)
		return err
	})
}

// RegisterMetrics adds the ingestor's counters to r.
func (in *Ingestor) RegisterMetrics(r *metrics.Registry) {
	c := &in.C
	r.CounterFunc("synapse_tier1_frames_total", "Tier-1 frames stored.", func() float64 { return float64(c.Frames.Load()) })
	r.CounterFunc("synapse_tier1_batches_total", "Tier-1 batches acknowledged (stored or duplicate).", func() float64 { return float64(c.Batches.Load()) })
	r.CounterFunc("synapse_tier1_duplicate_batches_total", "Tier-1 batches acknowledged without storing (batch_id seen).", func() float64 { return float64(c.Duplicates.Load()) })
	r.CounterFunc("synapse_tier1_refused_batches_total", "Tier-1 batches refused.", func() float64 { return float64(c.Refused.Load()) })
	r.CounterFunc("synapse_tier1_bytes_total", "Bytes of tier-1 batches stored.", func() float64 { return float64(c.Bytes.Load()) })
	r.CounterFunc("synapse_tier1_retention_dropped_frames_total", "Tier-1 frames deleted by retention (age or size).", func() float64 { return float64(c.Pruned.Load()) })
}
