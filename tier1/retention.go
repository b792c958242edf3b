package tier1

import (
	"context"
	"log/slog"
	"math"
	"time"

	"github.com/synapse-edge/synapse/internal/metrics"
	"github.com/synapse-edge/synapse/store"
)

// pruneBatch bounds the blocks one retention transaction deletes, so that
// retention never holds the store's writer for long.
const pruneBatch = 1000

// Prune applies retention once: each routine's frames older than
// c.RetentionHours (by their ts), the oldest of each drop_oldest routine
// beyond its limit, and the oldest of the drop_oldest routines while all
// of them exceed the disk budget (disk.go); then the batch ids seen before
// seenBefore (a sender retrying later than that would store twice). Every
// frame dropped is counted (Disk). The limits are those given to UseDisk,
// or c's without it.
func (in *Ingestor) Prune(ctx context.Context, now time.Time, c Config, seenBefore time.Time) error {
	before := now.Add(-c.Retention()).UnixNano() - BlockSpan
	d := in.disk
	if d == nil {
		d = &disk{routines: map[string]*routineDisk{}, extra: map[string]*routineDisk{}, conf: func() *Config { return &c }, now: in.cfg.Now, log: slog.New(slog.DiscardHandler)}
	}
	d.refreshFree(true)
	var routines []string
	_ = in.db.View(func(tx *store.Tx) error { routines = storedRoutines(tx); return nil })
	type pass struct {
		reason   string
		before   int64
		maxBytes uint64
	}
	for _, id := range routines {
		d.routine(id)
		passes := []pass{{dropAge, before, 0}}
		if limit, reject := c.quota(id); !reject && limit > 0 {
			passes = append(passes, pass{dropQuota, math.MinInt64, uint64(limit)})
		}
		for _, p := range passes {
			for blocks := pruneBatch; blocks == pruneBatch; {
				if err := ctx.Err(); err != nil {
					return err
				}
				err := d.update(in.db, &in.C.Pruned, func(tx *store.Tx, rm *room) error {
					var err error
					blocks, err = d.prune(tx, rm, id, p.reason, p.before, p.maxBytes, pruneBatch)
					_, size := storedStats(tx, id)
					rm.sizes = append(rm.sizes, sized{id, int64(size)})
					return err
				})
				if err != nil {
					return err
				}
			}
		}
	}
	for blocks := pruneBatch; blocks == pruneBatch; {
		err := d.update(in.db, &in.C.Pruned, func(tx *store.Tx, rm *room) error {
			var err error
			blocks, err = d.fitBudget(tx, rm, pruneBatch)
			return err
		})
		if err != nil {
			return err
		}
	}
	return in.db.Update(ctx, func(tx *store.Tx) error {
		_, err := pruneSeen(tx, seenBefore.UnixNano(), 100_000)
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
