package tier1_test

import (
	"fmt"
	"testing"

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
