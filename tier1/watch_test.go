package tier1_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/tier1"
)

// openIngestor is an ingestor (queueing for an uplink) over a fresh store
// whose clock says now.
func openIngestor(t *testing.T, now time.Time) (*tier1.Ingestor, *store.DB) {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close(context.Background()) })
	reg, err := tier1.NewRegistry(tier1.Telemetry())
	if err != nil {
		t.Fatal(err)
	}
	return tier1.NewIngestor(reg, db, tier1.IngestConfig{Uplink: true, Now: func() time.Time { return now }}), db
}

func batchAt(id, dev string, seq uint64, ts time.Time, n int) []byte {
	d := tier1.Telemetry()
	fs := make([]tier1.Frame, n)
	for i := range fs {
		fs[i] = tier1.Frame{tier1.Str(dev), tier1.Uint(seq + uint64(i)), tier1.Int(ts.UnixNano() + int64(i)), tier1.Str("temp"), tier1.Float(20.5), tier1.Str("C")}
	}
	return tier1.AppendBatch(nil, d.CapabilityID, d.Version, id, fs, &d)
}

func TestWatch(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	in, _ := openIngestor(t, now)
	ctx := context.Background()
	ingest := func(body []byte) {
		t.Helper()
		if _, err := in.Ingest(ctx, "s", "", body); err != nil {
			t.Fatal(err)
		}
	}
	ingest(batchAt("", "before", 1, now, 1)) // before any watcher: seen by none

	w := in.Watch(2, 1<<20)
	ingest(batchAt("b1", "d1", 1, now, 3))
	ingest(batchAt("b1", "d1", 1, now, 3)) // a duplicate: not stored, not sent
	ingest(batchAt("", "d2", 10, now, 2))
	ingest(batchAt("", "d3", 20, now, 1)) // C is full: missed
	if got := w.Missed.Load(); got != 1 {
		t.Errorf("Missed = %d, want 1", got)
	}
	want := []struct {
		dev    string
		frames int
	}{{"d1", 3}, {"d2", 2}}
	for _, wt := range want {
		l := <-w.C
		if l.Frames != wt.frames || l.Desc.CapabilityID != "synapse.telemetry" || len(l.Blocks) != 1 {
			t.Fatalf("live batch = %d frames in %d blocks of %s, want %d of %s", l.Frames, len(l.Blocks), l.Desc.CapabilityID, wt.frames, wt.dev)
		}
		br, err := tier1.NewBlockReader(l.Blocks[0], l.Desc)
		if err != nil {
			t.Fatal(err)
		}
		f, err := br.Next()
		if err != nil || f.At(0).Str() != wt.dev {
			t.Errorf("first frame %v (%v), want device %s", f, err, wt.dev)
		}
	}
	w.Close()
	w.Close() // safe twice
	if _, ok := <-w.C; ok {
		t.Errorf("C is open after Close")
	}
	ingest(batchAt("", "after", 1, now, 1)) // no watcher left: nothing to block on

	t.Run("bytes", func(t *testing.T) {
		w := in.Watch(100, 1) // room for one batch at a time, whatever its size
		defer w.Close()
		ingest(batchAt("", "d1", 100, now, 50))
		ingest(batchAt("", "d1", 200, now, 50)) // behind by a batch: missed
		if got := w.Missed.Load(); got != 1 {
			t.Errorf("Missed = %d, want 1", got)
		}
		l := <-w.C
		if l.Frames != 50 || l.Bytes == 0 {
			t.Errorf("first batch: %d frames, %d bytes", l.Frames, l.Bytes)
		}
		ingest(batchAt("", "d1", 300, now, 50)) // not released yet: missed
		w.Release(l)
		ingest(batchAt("", "d1", 400, now, 50))
		if got := w.Missed.Load(); got != 2 {
			t.Errorf("Missed = %d, want 2", got)
		}
		if l := <-w.C; l.Frames != 50 {
			t.Errorf("after Release: %d frames", l.Frames)
		}
	})
}
