package tier1_test

import (
	"testing"

	"github.com/synapse-edge/synapse/tier1"
)

func TestBlockRoundTrip(t *testing.T) {
	d := tier1.Telemetry()
	frame := func(dev string, seq uint64, metric string, v float64, unit tier1.Value) tier1.Frame {
		f := tier1.Frame{tier1.Str(dev), tier1.Uint(seq), tier1.Int(int64(seq) * 10), tier1.Str(metric), tier1.Float(v)}
		if !unit.IsNull() {
			f = append(f, unit)
		}
		return f
	}
	cases := []struct {
		name   string
		frames []tier1.Frame
	}{
		{"one frame", []tier1.Frame{frame("d", 1, "m", 1.5, tier1.Str("C"))}},
		{"constant device, metric and unit", []tier1.Frame{
			frame("d", 1, "m", 1.5, tier1.Str("C")), frame("d", 2, "m", 2.5, tier1.Str("C")), frame("d", 3, "m", 3.5, tier1.Str("C"))}},
		{"absent unit everywhere", []tier1.Frame{frame("d", 1, "m", 1, tier1.Null()), frame("d", 2, "m", 2, tier1.Null())}},
		{"unit in some frames only", []tier1.Frame{frame("d", 1, "m", 1, tier1.Str("C")), frame("d", 2, "n", 2, tier1.Null())}},
		{"nothing constant", []tier1.Frame{frame("a", 1, "m", 1, tier1.Str("C")), frame("b", 2, "n", 2, tier1.Str("F"))}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := tier1.AppendBlock(nil, c.frames, len(d.Fields))
			if got := tier1.BlockLen(b); got != len(c.frames) {
				t.Errorf("BlockLen = %d, want %d", got, len(c.frames))
			}
			br, err := tier1.NewBlockReader(b, &d)
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range c.frames {
				got, err := br.Next()
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if !got.Equal(want) {
					t.Errorf("frame %d = %v, want %v", i, got, want)
				}
			}
			if f, err := br.Next(); f != nil || err != nil {
				t.Errorf("after the last frame: %v, %v", f, err)
			}
		})
	}
	t.Run("constant columns are stored once", func(t *testing.T) {
		var frames []tier1.Frame
		for i := range 100 {
			frames = append(frames, frame("site-0003/line-07/gateway-0042/sensor-007", uint64(i), "temperature.ambient.celsius", float64(i), tier1.Str("degC")))
		}
		plain := 0
		for _, f := range frames {
			plain += len(tier1.AppendFrame(nil, f))
		}
		if got := len(tier1.AppendBlock(nil, frames, len(d.Fields))); got*3 > plain {
			t.Errorf("block is %d bytes for %d bytes of frames; want under a third", got, plain)
		}
	})
	t.Run("garbage is refused", func(t *testing.T) {
		for _, b := range [][]byte{nil, {0x90}, {0x93, 0xa1, 'x'}, {0x93, 0x00, 0x90}} {
			if _, err := tier1.NewBlockReader(b, &d); err == nil {
				t.Errorf("NewBlockReader(% x) accepted", b)
			}
		}
	})
}
