package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/synapse-edge/synapse/tier1"
)

func TestFramesAreFrameBytesAndDecode(t *testing.T) {
	g := newGenerator(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
	reg, err := tier1.NewRegistry(tier1.Telemetry())
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	for i, f := range g.frames(0, n) {
		if got := len(f); got != frameBytes {
			t.Fatalf("frame %d: got %d bytes, want %d", i, got, frameBytes)
		}
	}
	for _, size := range []int{1, 15, 16, 1000} {
		t.Run(fmt.Sprintf("batch of %d", size), func(t *testing.T) {
			msgs := g.batches(100, n, size, "t")
			if got, want := len(msgs), (n+size-1)/size; got != want {
				t.Fatalf("got %d batches, want %d", got, want)
			}
			b, err := tier1.DecodeBatch(msgs[1], reg, tier1.Limits{})
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got, want := b.BatchID, "t-1"; got != want {
				t.Errorf("batch id: got %q, want %q", got, want)
			}
			if got, want := len(b.Frames), min(size, n-size); got != want {
				t.Fatalf("got %d frames, want %d", got, want)
			}
			if want := g.frame(100 + uint64(size)); !b.Frames[0].Equal(want) {
				t.Errorf("first frame: got %v, want %v", b.Frames[0], want)
			}
		})
	}
}

func TestGeneratorTakeNeverRepeats(t *testing.T) {
	g := newGenerator(0)
	a, b := g.take(10), g.take(5)
	if a != 0 || b != 10 || g.take(1) != 15 {
		t.Fatalf("take: got %d, %d, want 0, 10, then 15", a, b)
	}
	keys := g.boltKeys(0, 20)
	for i := 1; i < len(keys); i++ {
		if bytes.Compare(keys[i-1], keys[i]) >= 0 {
			t.Fatalf("bbolt keys %d and %d are not increasing", i-1, i)
		}
	}
}

func TestBatchFrameCount(t *testing.T) {
	g := newGenerator(1)
	for _, n := range []int{1, 15, 16, 1000, 70_000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			got, err := batchFrameCount(g.batches(0, n, n, "x")[0])
			if err != nil || got != n {
				t.Fatalf("got %d, %v; want %d", got, err, n)
			}
		})
	}
	bad := map[string][]byte{
		"empty":            nil,
		"not an array":     {0xa1, 'x'},
		"array of 2":       {0x92, 0xa1, 'x', 0xa1, 'y'},
		"truncated string": {0x93, 0xa5, 'x'},
		"frames not array": {0x93, 0xa1, 'x', 0xa1, 'y', 0x01},
	}
	for name, b := range bad {
		t.Run(name, func(t *testing.T) {
			if _, err := batchFrameCount(b); !errors.Is(err, errNotBatch) {
				t.Fatalf("got %v, want errNotBatch", err)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	cases := []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, c := range cases {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v): got %g, want %g", c.in, got, c.want)
		}
	}
}

func TestParseMetrics(t *testing.T) {
	text := "# HELP synapse_tier1_frames_total Tier-1 frames stored.\n" +
		"# TYPE synapse_tier1_frames_total counter\n" +
		"synapse_tier1_frames_total 200000\n" +
		`synapse_http_requests_total{route="x"} 7` + "\n" +
		"synapse_store_commit_seconds_total 1.25\n"
	got := parseMetrics([]byte(text))
	if got[metricFrames] != 200000 || got[metricCommitSecs] != 1.25 || len(got) != 2 {
		t.Fatalf("got %v", got)
	}
}

func TestProcStat(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	rss, err := procRSS(os.Getpid())
	if err != nil || rss < 1<<20 {
		t.Fatalf("procRSS: got %d, %v; want at least 1 MiB", rss, err)
	}
	if _, err := procCPU(os.Getpid()); err != nil {
		t.Fatalf("procCPU: %v", err)
	}
	s := sample(os.Getpid())
	if got, _ := s.stop(); got < rss/2 {
		t.Fatalf("sampler max RSS: got %d, want about %d", got, rss)
	}
}

func TestSinkAcksEveryFrame(t *testing.T) {
	s, err := startSink()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.close() })
	g := newGenerator(1)
	msgs := g.batches(0, 2500, 100, "s")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	elapsed, acked, err := wsIngest(ctx, s.url(), "", msgs, 64)
	if err != nil {
		t.Fatal(err)
	}
	if acked != 2500 || elapsed <= 0 {
		t.Fatalf("got %d frames acked in %v, want 2500", acked, elapsed)
	}

	_, _, err = wsIngest(ctx, s.url(), "", [][]byte{[]byte("not a batch")}, 64)
	if !errors.Is(err, errAckRefused) {
		t.Fatalf("a malformed batch: got %v, want errAckRefused", err)
	}
}

func TestBoltCeilingStoresEveryRecord(t *testing.T) {
	b, err := openBolt(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.close() })
	g := newGenerator(1)
	if _, err := b.write(g.boltKeys(0, 2500), g.frames(0, 2500), 1000); err != nil {
		t.Fatal(err)
	}
	if got := boltCount(t, b); got != 2500 {
		t.Fatalf("got %d records, want 2500", got)
	}
}

func TestWireSizes(t *testing.T) {
	ws, err := measureWireSizes(time.Now().UnixNano(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if ws.Frame != frameBytes || ws.Tier1Batch < frameBytes || ws.Tier1Batch > frameBytes+1 {
		t.Errorf("tier-1: got %d B/frame and %.2f B/frame batched, want %d and just above", ws.Frame, ws.Tier1Batch, frameBytes)
	}
	// A signed envelope carries at least the frame's JSON and an 88-character signature.
	if ws.EnvelopeJSON < ws.JSONFrame+88 || ws.EnvelopeBatch <= float64(ws.JSONFrame) {
		t.Errorf("envelopes: got %d B per frame and %.1f B/frame batched, JSON frame %d B", ws.EnvelopeJSON, ws.EnvelopeBatch, ws.JSONFrame)
	}
}

func TestTableNamesTargets(t *testing.T) {
	r := &results{runInfo: runInfo{Config: config{Frames: 10, Batch: 5, Single: 2, Rounds: 1}}}
	rate := func(x float64) []runStats { return []runStats{{FramesPerS: x, Frames: 10}} }
	r.Engines = []engineResult{
		{engine: engine{Name: "synapse WebSocket (durable)", Group: "batch", Synapse: true, Unit: "5 frames/msg"}, Runs: rate(1000)},
		{engine: engine{Name: "mosquitto QoS1", Group: "batch", Unit: "5 frames/msg"}, Runs: rate(200)},
		{engine: engine{Name: "bbolt ceiling", Group: "batch", Unit: "1000 records/tx"}, Runs: rate(4000)},
	}
	r.summarize()
	if got := r.Engines[1].Ratio; got != 5 {
		t.Errorf("mosquitto ratio: got %g, want 5", got)
	}
	// 1000/200 = 5 < 10 and 1000/4000 = 0.25 < 0.5: both missed.
	if len(r.Targets) != 2 || r.Targets[0].Met || r.Targets[1].Met || r.Targets[1].Ratio != 0.25 {
		t.Errorf("targets: got %+v", r.Targets)
	}
	var out strings.Builder
	r.writeTable(&out)
	for _, want := range []string{"| mosquitto QoS1 | 5 frames/msg |", "5.00×", "goal ≥ 10×): NOT met"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

func boltCount(t *testing.T, b *boltCeiling) int {
	t.Helper()
	n := 0
	err := b.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(boltBucket).Stats().KeyN
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
