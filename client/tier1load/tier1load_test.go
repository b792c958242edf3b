package tier1load

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/tier1"
)

func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var ds []time.Duration
		for _, n := range ns {
			ds = append(ds, time.Duration(n)*time.Millisecond)
		}
		return ds
	}
	tests := []struct {
		name string
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one", ms(7), 0.99, 7 * time.Millisecond},
		{"median of unsorted", ms(5, 1, 4, 2, 3), 0.5, 3 * time.Millisecond},
		{"median of even count is the lower", ms(4, 1, 3, 2), 0.5, 2 * time.Millisecond},
		{"p99 of 100", ms(func() []int {
			var ns []int
			for i := 100; i >= 1; i-- {
				ns = append(ns, i)
			}
			return ns
		}()...), 0.99, 99 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.ds, tt.p); got != tt.want {
				t.Errorf("percentile = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestBatchGen(t *testing.T) {
	cfg := Config{Batch: 5, Devices: 3, Metric: "temp", Unit: "C"}
	g := NewGen(cfg)
	reg, err := tier1.NewRegistry(tier1.Telemetry())
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().UnixNano()
	wantSeq := map[string]uint64{}
	for n := 1; n <= 3; n++ {
		size := 5
		if n == 3 {
			size = 2
		}
		pb := g.Next(size)
		b, err := tier1.DecodeBatch(pb.Data, reg, tier1.Limits{})
		if err != nil {
			t.Fatalf("batch %d does not decode: %v", n, err)
		}
		wantID := regexp.MustCompile(`^.+-` + strconv.Itoa(os.Getpid()) + `-[0-9a-f]{8}-` + strconv.Itoa(n) + `$`)
		if pb.ID != b.BatchID || !wantID.MatchString(b.BatchID) || pb.Frames != size || len(b.Frames) != size {
			t.Fatalf("batch %d: id %q (decoded %q), %d frames (decoded %d); want id matching %s and %d frames",
				n, pb.ID, b.BatchID, pb.Frames, len(b.Frames), wantID, size)
		}
		for _, f := range b.Frames {
			dev := f.At(0).Str()
			wantSeq[dev]++
			if got := f.At(1).Uint(); got != wantSeq[dev] {
				t.Errorf("%s: seq %d, want %d", dev, got, wantSeq[dev])
			}
			if ts := f.At(2).Int(); ts < before || ts > time.Now().UnixNano() {
				t.Errorf("ts %d is not the time of sending", ts)
			}
			if f.At(3).Str() != "temp" || f.At(5).Str() != "C" {
				t.Errorf("frame %v: want metric temp and unit C", f)
			}
			if v := f.At(4).Float(); v < 14 || v > 26 || v*16 != float64(int(v*16)) {
				t.Errorf("value %v: want 20±5 in steps of 1/16", v)
			}
		}
	}
	if other := NewGen(cfg); other.prefix == g.prefix {
		t.Errorf("two runs share the batch id prefix %q", g.prefix)
	}
	// 12 frames over 3 devices in turn.
	for _, dev := range []string{"dev-0001", "dev-0002", "dev-0003"} {
		if wantSeq[dev] != 4 {
			t.Errorf("%s sent %d frames, want 4 (devices take turns)", dev, wantSeq[dev])
		}
	}
}

func TestProduce(t *testing.T) {
	collect := func(t *testing.T, ctx context.Context, cfg Config) (frames []int, interrupted bool, took time.Duration) {
		t.Helper()
		start := time.Now()
		interrupted, err := Produce(ctx, cfg, NewGen(cfg), func(b *Batch) error {
			frames = append(frames, b.Frames)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return frames, interrupted, time.Since(start)
	}
	base := Config{Batch: 100, Devices: 2, Metric: "m"}

	t.Run("frames limit cuts the last batch", func(t *testing.T) {
		cfg := base
		cfg.Frames = 250
		got, interrupted, _ := collect(t, context.Background(), cfg)
		if want := []int{100, 100, 50}; !slices.Equal(got, want) || interrupted {
			t.Errorf("batches %v interrupted %v, want %v and not interrupted", got, interrupted, want)
		}
	})
	t.Run("rate paces the batches", func(t *testing.T) {
		cfg := base
		cfg.Frames, cfg.Rate = 1000, 10_000
		got, _, took := collect(t, context.Background(), cfg)
		// The tenth batch is due 90 ms after the first.
		if len(got) != 10 || took < 90*time.Millisecond {
			t.Errorf("%d batches in %s, want 10 in at least 90ms", len(got), took)
		}
	})
	t.Run("duration ends an unpaced run", func(t *testing.T) {
		cfg := base
		cfg.Duration = 50 * time.Millisecond
		got, _, took := collect(t, context.Background(), cfg)
		if len(got) == 0 || took < cfg.Duration {
			t.Errorf("%d batches in %s, want some, for at least %s", len(got), took, cfg.Duration)
		}
	})
	t.Run("duration ends a paced run before a batch due after it", func(t *testing.T) {
		cfg := base
		cfg.Duration, cfg.Rate = 250*time.Millisecond, 1000 // a batch every 100 ms
		got, _, _ := collect(t, context.Background(), cfg)
		// Due at 0, 100 and 200 ms; on a loaded machine the third may
		// come too late to go out before the end.
		if len(got) < 2 || len(got) > 3 {
			t.Errorf("%d batches, want 3 (due at 0, 100 and 200 ms)", len(got))
		}
	})
	t.Run("cancel interrupts", func(t *testing.T) {
		cfg := base
		cfg.Duration, cfg.Rate = time.Hour, 1
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		interrupted, err := Produce(ctx, cfg, NewGen(cfg), func(*Batch) error {
			n++
			cancel() // while the next batch waits for its time
			return nil
		})
		if err != nil || !interrupted || n != 1 {
			t.Errorf("interrupted %v, err %v, %d batches; want interrupted after 1", interrupted, err, n)
		}
	})
	t.Run("stop from send", func(t *testing.T) {
		cfg := base
		cfg.Frames = 1000
		n := 0
		interrupted, err := Produce(context.Background(), cfg, NewGen(cfg), func(*Batch) error {
			n++
			return ErrStop
		})
		if err != nil || interrupted || n != 1 {
			t.Errorf("interrupted %v, err %v, %d batches; want a quiet stop after 1", interrupted, err, n)
		}
	})
}

func TestSendStats(t *testing.T) {
	st := &Stats{}
	t0 := time.Now()
	batches := []*Batch{{ID: "b-1", Frames: 10, SentAt: t0}, {ID: "b-2", Frames: 5, SentAt: t0}, {ID: "b-3", Frames: 7, SentAt: t0}}
	for _, b := range batches {
		st.Sent(b, 100)
	}
	st.Answer(batches[0], &client.Tier1Ack{OK: true, Accepted: 10, BatchID: "b-1"}, t0.Add(2*time.Millisecond))
	st.Answer(batches[1], &client.Tier1Ack{BatchID: "b-2", Error: &client.Tier1AckError{Code: "invalid_params", Message: "frame 3: bad"}},
		t0.Add(4*time.Millisecond))
	if got := st.Unanswered(); got != 7 {
		t.Errorf("unanswered = %d, want 7", got)
	}
	st.Finish()
	sum := st.Summary(Config{})
	if sum.FramesSent != 22 || sum.BatchesSent != 3 || sum.Acknowledged != 10 || sum.Refused != 5 || sum.Unacknowledged != 7 ||
		sum.WireBytes != 300 || sum.FirstError != "batch b-2: invalid_params: frame 3: bad" {
		t.Errorf("summary = %+v", sum)
	}
	if sum.DurationSeconds != 0.004 || sum.FramesPerSecond != 2500 || sum.AckP50Ms != 2 || sum.AckP99Ms != 4 {
		t.Errorf("duration %v, rate %v, p50 %v, p99 %v; want 0.004 s, 2500 frames/s, 2 ms, 4 ms",
			sum.DurationSeconds, sum.FramesPerSecond, sum.AckP50Ms, sum.AckP99Ms)
	}
	if got, want := sum.BytesPerFrame, 300.0/22; got != want {
		t.Errorf("bytes per frame = %v, want %v", got, want)
	}
}
