package store_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"

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

// BenchmarkRecoverFullLog is a restart after a crash with a full commit
// log: the checkpoint limit's worth of task writes (CheckpointBytes,
// 1 MiB by default; 4 MiB here) replayed into the file at Open. The files are copied
// while the store serves, as a power cut would leave them.
func BenchmarkRecoverFullLog(b *testing.B) {
	src := tempPath(b)
	db := openDB(b, src, store.Options{CheckpointInterval: time.Hour, CheckpointBytes: 4 << 20})
	ctx := context.Background()
	now := time.Now()
	for db.Stats().LogBytes.Load() < 4<<20-8<<10 {
		task := newTask(b, "bench", wire.StatusConfirmed, now)
		if err := db.Update(ctx, func(tx *store.Tx) error { return tx.CreateTask(task) }); err != nil {
			b.Fatal(err)
		}
	}
	if n := db.Stats().Checkpoints.Load(); n != 0 {
		b.Fatalf("%d checkpoints while filling the log", n)
	}
	logBytes := db.Stats().LogBytes.Load()
	crashed := b.TempDir()
	copyFiles(b, src, filepath.Join(crashed, "c.db"))
	b.ReportMetric(float64(logBytes)/(1<<20), "logMiB")
	for b.Loop() {
		b.StopTimer()
		dst := filepath.Join(b.TempDir(), "c.db")
		copyFiles(b, filepath.Join(crashed, "c.db"), dst)
		b.StartTimer()
		rdb, err := store.Open(ctx, dst, store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := rdb.Close(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// copyFiles copies a data file and its commit log.
func copyFiles(tb testing.TB, src, dst string) {
	tb.Helper()
	cp := func(from, to string) {
		data, err := os.ReadFile(from)
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(to, data, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	cp(src, dst)
	if err := os.MkdirAll(store.LogDir(dst), 0o700); err != nil {
		tb.Fatal(err)
	}
	ents, err := os.ReadDir(store.LogDir(src))
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range ents {
		cp(filepath.Join(store.LogDir(src), e.Name()), filepath.Join(store.LogDir(dst), e.Name()))
	}
}
