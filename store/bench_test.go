package store_test

import (
	"context"
	"os"
	"strconv"
	"strings"
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
	start, disk0 := db.Stats().Commits.Load(), writeBytes()
	for b.Loop() {
		task := newTask(b, "bench", wire.StatusConfirmed, now)
		if err := db.Update(ctx, func(tx *store.Tx) error { return tx.CreateTask(task) }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(db.Stats().Commits.Load()-start)/float64(b.N), "commits/op")
	if disk := writeBytes(); disk >= 0 && disk0 >= 0 {
		b.ReportMetric(float64(disk-disk0)/float64(b.N), "diskB/op")
	}
}

// writeBytes is this process's write_bytes of /proc/self/io: what it
// made the kernel send to the disk (-1 where there is no such file), the
// cost the commit log of issue 27 is measured against.
func writeBytes() int64 {
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return -1
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
