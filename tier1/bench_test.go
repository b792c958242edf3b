package tier1_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/store"

	"github.com/synapse-edge/synapse/tier1"
)

// telemetryFrames returns n realistic telemetry frames.
func telemetryFrames(n int) []tier1.Frame {
	frames := make([]tier1.Frame, n)
	metrics := []string{"temperature", "humidity", "pressure", "voltage"}
	units := []string{"C", "%", "hPa", "V"}
	for i := range frames {
		frames[i] = tier1.Frame{
			tier1.Str(fmt.Sprintf("gw-07/sensor-%03d", i%50)),
			tier1.Uint(uint64(i)),
			tier1.Int(1700000000000000000 + int64(i)*1_000_000),
			tier1.Str(metrics[i%4]),
			tier1.Float(20 + float64(i%100)/7),
			tier1.Str(units[i%4]),
		}
	}
	return frames
}

func BenchmarkDecodeBatch(b *testing.B) {
	const n = 1000
	d := tier1.Telemetry()
	reg, err := tier1.NewRegistry(d)
	if err != nil {
		b.Fatal(err)
	}
	buf := tier1.AppendBatch(nil, d.CapabilityID, d.Version, "bench", telemetryFrames(n), &d)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		batch, err := tier1.DecodeBatch(buf, reg, tier1.Limits{})
		if err != nil || len(batch.Frames) != n {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/frame")
}

// BenchmarkDecodeOneFrame decodes a one-frame batch, as each message of a
// sender of one-frame batches is: the per-batch costs of the decoder.
func BenchmarkDecodeOneFrame(b *testing.B) {
	d := tier1.Telemetry()
	reg, err := tier1.NewRegistry(d)
	if err != nil {
		b.Fatal(err)
	}
	buf := tier1.AppendBatch(nil, d.CapabilityID, d.Version, "bench-1", telemetryFrames(1), &d)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tier1.DecodeBatch(buf, reg, tier1.Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendBatch(b *testing.B) {
	const n = 1000
	d := tier1.Telemetry()
	frames := telemetryFrames(n)
	buf := tier1.AppendBatch(nil, d.CapabilityID, d.Version, "bench", frames, &d)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = tier1.AppendBatch(buf[:0], d.CapabilityID, d.Version, "bench", frames, &d)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/frame")
}

func BenchmarkAppendJSON(b *testing.B) {
	d := tier1.Telemetry()
	f := telemetryFrames(1)[0]
	buf := f.AppendJSON(nil, &d)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = f.AppendJSON(buf[:0], &d)
	}
}

// benchIngestor is an ingestor of the telemetry routine on a fresh store.
func benchIngestor(b *testing.B) *tier1.Ingestor {
	b.Helper()
	db, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "t.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close(context.Background()) })
	reg, err := tier1.NewRegistry(tier1.Telemetry())
	if err != nil {
		b.Fatal(err)
	}
	return tier1.NewIngestor(reg, db, tier1.IngestConfig{})
}

// BenchmarkIngestOneFrame queues b.N one-frame batches (as a WebSocket
// sender pipelines them) into a real store and waits until all are
// durable: the per-batch cost of the ingest path, with its allocations.
func BenchmarkIngestOneFrame(b *testing.B) {
	in := benchIngestor(b)
	now := time.Now()
	bodies := make([][]byte, b.N)
	for i := range bodies {
		bodies[i] = batchAt(fmt.Sprintf("b-%d", i), "bench", uint64(i), now.Add(time.Duration(i)), 1)
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	for _, body := range bodies {
		wg.Add(1)
		if err := in.IngestAsync(context.Background(), "bench", "", body, func(_ tier1.Result, err error) {
			if err != nil {
				failed.Add(1)
			}
			wg.Done()
		}); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d batches refused", n)
	}
}

// BenchmarkStoreOneFrame prepares b.N one-frame batches (each with its own
// batch_id, 16 devices round-robin) and stores them in writes of 2,000, as
// a stream does while a commit is on its way to the disk: the per-frame
// cost of the grouped ingest path (decode, blocks, batch-id table, store
// write) without the WebSocket.
func BenchmarkStoreOneFrame(b *testing.B) { storeOneFrame(b, benchIngestor(b)) }

// storeOneFrame is BenchmarkStoreOneFrame on in.
func storeOneFrame(b *testing.B, in *tier1.Ingestor) {
	now := time.Now()
	bodies := make([][]byte, b.N)
	for i := range bodies {
		bodies[i] = batchAt(fmt.Sprintf("b-%d", i), fmt.Sprintf("sensor-%02d", i%16), uint64(i), now.Add(time.Duration(i)), 1)
	}
	const group = 2000
	b.ReportAllocs()
	b.ResetTimer()
	for start := 0; start < len(bodies); start += group {
		ps := make([]*tier1.Pending, 0, group)
		for _, body := range bodies[start:min(start+group, len(bodies))] {
			p, err := in.Prepare(context.Background(), "bench", "", body)
			if err != nil {
				b.Fatal(err)
			}
			ps = append(ps, p)
		}
		done := make(chan struct{})
		in.Store(ps, func() { close(done) })
		<-done
		for _, p := range ps {
			if p.Err != nil {
				b.Fatal(p.Err)
			}
		}
	}
}

// BenchmarkStreamOneFrame pipelines b.N one-frame batches (each with its
// own batch_id, 16 devices round-robin) through one Stream into a real
// store, as the WebSocket of /tier1/stream does, and reads the answers:
// the per-batch cost of that path, with its allocations, without the
// connection.
func BenchmarkStreamOneFrame(b *testing.B) {
	in := benchIngestor(b)
	now := time.Now()
	bodies := make([][]byte, b.N)
	for i := range bodies {
		bodies[i] = batchAt(fmt.Sprintf("b-%d", i), fmt.Sprintf("sensor-%02d", i%16), uint64(i), now.Add(time.Duration(i)), 1)
	}
	st := in.NewStream(4096)
	answered := 0
	var failed error
	pumped := make(chan struct{})
	b.ReportAllocs()
	b.ResetTimer()
	go func() {
		defer close(pumped)
		st.Pump(func(as []tier1.Answer) {
			for i := range as {
				if as[i].Err != nil && failed == nil {
					failed = as[i].Err
				}
			}
			answered += len(as)
		})
	}()
	for _, body := range bodies {
		p, err := in.Prepare(context.Background(), "bench", "", body)
		st.Add(p, err)
	}
	st.End()
	<-pumped
	b.StopTimer()
	if failed != nil || answered != b.N {
		b.Fatalf("%d of %d answered; %v", answered, b.N, failed)
	}
}
