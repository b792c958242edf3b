package bodycodec_test

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"fmt"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/client/tier1load"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/tier1/bodycodec"
)

// sendBatch is a batch of `synapse tier1 send` (its defaults: 100
// frames, 10 devices, metric temperature, unit C).
func sendBatch() []byte {
	g := tier1load.NewGen(tier1load.Config{Batch: 100, Devices: 10, Metric: "temperature", Unit: "C"})
	g.Next(100)
	return g.Next(100).Data
}

// benchBatch is a batch of the bench's workload (bench/tier1/workload.go:
// 16 sensors with long names, a ms apart, a slowly moving float64).
func benchBatch() []byte {
	d := tier1.Telemetry()
	base := time.Now().UnixNano()
	fs := make([]tier1.Frame, 100)
	for i := range fs {
		fs[i] = tier1.Frame{tier1.Str(fmt.Sprintf("site-0003/line-07/gateway-0042/sensor-%03d", i%16)), tier1.Uint(1<<20 + uint64(i)),
			tier1.Int(base + int64(i)*1000), tier1.Str("temperature.ambient.celsius"), tier1.Float(15 + float64(i%2000)*0.01 + 0.001), tier1.Str("degC")}
	}
	return tier1.AppendBatch(nil, d.CapabilityID, d.Version, "bench-1", fs, &d)
}

// BenchmarkCompress is the CPU per MB of raw batch and the ratio, per
// level, on both workloads: go test -bench Compress ./tier1/bodycodec.
func BenchmarkCompress(b *testing.B) {
	for _, w := range []struct {
		name  string
		batch []byte
	}{{"send", sendBatch()}, {"bench", benchBatch()}} {
		for _, level := range []int{flate.BestSpeed, flate.DefaultCompression, flate.BestCompression} {
			b.Run(fmt.Sprintf("%s/level=%d", w.name, level), func(b *testing.B) {
				var out bytes.Buffer
				zw, _ := gzip.NewWriterLevel(&out, level)
				b.SetBytes(int64(len(w.batch)))
				for b.Loop() {
					out.Reset()
					zw.Reset(&out)
					_, _ = zw.Write(w.batch)
					_ = zw.Close()
				}
				b.ReportMetric(float64(len(w.batch))/float64(out.Len()), "ratio")
				b.ReportMetric(float64(b.Elapsed().Milliseconds())/(float64(b.N)*float64(len(w.batch))/1e6), "ms/MB")
			})
		}
		b.Run(w.name+"/decode", func(b *testing.B) {
			var e bodycodec.Encoder
			z, _ := e.Encode(nil, bodycodec.Gzip, w.batch)
			b.SetBytes(int64(len(w.batch)))
			for b.Loop() {
				if _, err := bodycodec.Decode(bodycodec.Gzip, z, 1<<20); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/(float64(b.N)*float64(len(w.batch))/1e6), "ms/MB")
		})
	}
}
