package store_test

import (
	"context"
	"github.com/synapse-edge/synapse/internal/testutil"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// BenchmarkUpdate is one task per commit: the cost of a durable write
// (dominated by fsync).
func BenchmarkUpdate(b *testing.B) {
	db := openDB(b, tempPath(b), store.Options{})
	ctx := context.Background()
	now := time.Now()
	b.ReportAllocs()
	start, disk0 := db.Stats().Commits.Load(), testutil.WriteBytes()
	for b.Loop() {
		task := newTask(b, "bench", wire.StatusConfirmed, now)
		if err := db.Update(ctx, func(tx *store.Tx) error { return tx.CreateTask(task) }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(db.Stats().Commits.Load()-start)/float64(b.N), "commits/op")
	if disk := testutil.WriteBytes(); disk >= 0 && disk0 >= 0 {
		b.ReportMetric(float64(disk-disk0)/float64(b.N), "diskB/op")
	}
}

// BenchmarkUpdateParallel writes from many goroutines; group commit shares
// each fsync among the writes waiting for it, so commits/op falls well
// below 1.
func BenchmarkUpdateParallel(b *testing.B) {
	db := openDB(b, tempPath(b), store.Options{})
	ctx := context.Background()
	now := time.Now()
	b.ReportAllocs()
	b.SetParallelism(16)
	b.ResetTimer()
	start := db.Stats().Commits.Load()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			task := newTask(b, "bench", wire.StatusConfirmed, now)
			if err := db.Update(ctx, func(tx *store.Tx) error { return tx.CreateTask(task) }); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(db.Stats().Commits.Load()-start)/float64(b.N), "commits/op")
}
