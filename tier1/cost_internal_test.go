package tier1

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/store"
)

// telemetryFrames are n frames shaped like bench/tier1's (100 bytes each).
func telemetryFrames(n int) []Frame {
	fs := make([]Frame, n)
	for i := range fs {
		fs[i] = Frame{Str(fmt.Sprintf("site-0003/line-07/gateway-0042/sensor-%03d", i%16)), Uint(uint64(1_000_000 + i)),
			Int(1_790_000_000_000_000_000 + int64(i)), Str("temperature.ambient.celsius"), Float(21.5 + float64(i%7)), Str("degC")}
	}
	return fs
}

// counterFrames are n frames of eight small counters (one byte each on
// the wire, 32 decoded): the most a decoded frame costs per byte.
func counterFrames(n int) []Frame {
	fs := make([]Frame, n)
	for i := range fs {
		fs[i] = Frame{Uint(1), Uint(2), Uint(3), Uint(4), Uint(5), Uint(6), Uint(7), Uint(uint64(i % 100))}
	}
	return fs
}

// TestPrepareChargesWhatItHolds: the in-flight budget charges each
// prepared batch at least the heap it holds until it is stored, and not
// more than twice that (the budget is memory, not a guess): one-frame
// and large batches, strings and small numbers.
func TestPrepareChargesWhatItHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap; skipped with -short")
	}
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "c.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	counters := Descriptor{CapabilityID: "test.counters", Version: "1.0.0", Name: "Counters"}
	for i := range 8 {
		counters.Fields = append(counters.Fields, Field{Name: fmt.Sprintf("c%d", i), Type: TypeUint})
	}
	reg, err := NewRegistry(Telemetry(), counters)
	if err != nil {
		t.Fatal(err)
	}
	in := NewIngestor(reg, db, IngestConfig{MaxInflightBytes: 1 << 30, Now: time.Now})
	for _, tc := range []struct {
		routine string
		frames  func(int) []Frame
	}{{"synapse.telemetry", telemetryFrames}, {"test.counters", counterFrames}} {
		d, _ := reg.Get(tc.routine)
		for _, size := range []int{1, 10, 100, 1000} {
			t.Run(fmt.Sprintf("%s/%d", tc.routine, size), func(t *testing.T) {
				n := min(200, 20_000/size) // enough of them for the heap to show their size
				bodies := make([][]byte, n)
				for i := range bodies {
					bodies[i] = AppendBatch(nil, d.CapabilityID, d.Version, fmt.Sprintf("b-%d-%d", size, i), tc.frames(size), d)
				}
				ps := make([]*Pending, n)
				runtime.GC()
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				for i := range ps {
					if ps[i], err = in.Prepare(context.Background(), "s", "", bodies[i]); err != nil {
						t.Fatal(err)
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&m1)
				held := int64(m1.HeapAlloc-m0.HeapAlloc) / int64(n)
				charged := ps[0].size
				t.Logf("body %6d B, holds %7d B (%.2f× the body), charged %7d B", len(bodies[0]), held, float64(held)/float64(len(bodies[0])), charged)
				// The costs are sized on 64-bit machines: on 32-bit ones
				// a batch holds less than they charge (its values and its
				// Pending take a third less), which errs on the side of
				// memory; there only the floor is checked.
				if charged < held || strconv.IntSize == 64 && charged > 2*held {
					t.Errorf("charged %d B for a batch that holds %d B: want between the two and twice that", charged, held)
				}
				for _, p := range ps {
					in.budget.release(p.size)
				}
				runtime.KeepAlive(ps)
			})
		}
	}
}
