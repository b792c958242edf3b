package tier1_test

import (
	"math"
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
			checkBlock(t, tier1.AppendBlock(nil, c.frames, len(d.Fields)), &d, c.frames)
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

func TestBlockSteps(t *testing.T) {
	d := stepsDescriptor()
	mk := func(n int, seq func(int) uint64, ts func(int) int64, opt func(int) tier1.Value) []tier1.Frame {
		var fs []tier1.Frame
		for i := range n {
			fs = append(fs, tier1.Frame{tier1.Str("d"), tier1.Uint(seq(i)), tier1.Int(ts(i)), opt(i), tier1.Float(float64(i%7) / 4)})
		}
		return fs
	}
	null := func(int) tier1.Value { return tier1.Null() }
	cases := []struct {
		name   string
		frames []tier1.Frame
		form   byte // the block's first byte: 0x93 as values, 0x96 with steps
	}{
		{"seq by one, ts by a little", mk(100, func(i int) uint64 { return uint64(i) + 7 }, func(i int) int64 { return 1_700_000_000_000_000_000 + int64(i*i*37) }, null), 0x96},
		{"two frames", mk(2, func(i int) uint64 { return uint64(i * 5) }, func(i int) int64 { return int64(-i) }, null), 0x96},
		{"a uint above int64 and wrapping", mk(50, func(i int) uint64 { return math.MaxUint64 - 10 + uint64(i) }, func(i int) int64 { return math.MaxInt64 - 20 + int64(i)*int64(i%3) }, null), 0x96},
		{"going down across int64's ends", mk(40, func(i int) uint64 { return uint64(40 - i) }, func(i int) int64 { return math.MinInt64 + 5 - int64(i)*(1<<40) }, null), 0x96},
		{"an optional int in some frames", mk(30, func(i int) uint64 { return uint64(i) }, func(i int) int64 { return int64(i) << 3 }, func(i int) tier1.Value {
			if i%3 == 0 {
				return tier1.Int(int64(i))
			}
			return tier1.Null()
		}), 0x96},
		{"an optional int in every frame", mk(30, func(i int) uint64 { return uint64(i) }, func(i int) int64 { return int64(i) << 3 }, func(i int) tier1.Value { return tier1.Int(int64(i * i)) }), 0x96},
		{"values that jump: kept as values", mk(20, func(i int) uint64 { return uint64(i%2) << 50 }, func(i int) int64 { return int64(i%2) << 60 }, null), 0x93},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := tier1.AppendBlock(nil, c.frames, len(d.Fields))
			if b[0] != c.form {
				t.Errorf("block form %#x, want %#x", b[0], c.form)
			}
			checkBlock(t, b, &d, c.frames)
		})
	}
	t.Run("a telemetry frame takes under ten bytes", func(t *testing.T) {
		td := tier1.Telemetry()
		var frames []tier1.Frame
		ts := int64(1_764_000_000_000_000_000)
		for i := range 100 {
			ts += 700 + int64(i%5)*100 // sent about a microsecond apart
			frames = append(frames, tier1.Frame{tier1.Str("dev-0001"), tier1.Uint(uint64(1000 + i)), tier1.Int(ts), tier1.Str("temperature"), tier1.Float(20 + float64(i%16)/16)})
		}
		b := tier1.AppendBlock(nil, frames, len(td.Fields))
		if len(b) > 100*10 {
			t.Errorf("100 frames in %d bytes, want at most 1000", len(b))
		}
	})
}

func TestBlockStepsRefused(t *testing.T) {
	d := tier1.Telemetry()
	// A valid second-form block of two frames, then the same with each
	// part broken.
	good := tier1.AppendBlock(nil, []tier1.Frame{
		{tier1.Str("d"), tier1.Uint(1), tier1.Int(10), tier1.Str("m"), tier1.Float(1)},
		{tier1.Str("d"), tier1.Uint(2), tier1.Int(30), tier1.Str("m"), tier1.Float(2)},
	}, len(d.Fields))
	if good[0] != 0x96 {
		t.Fatalf("block form %#x, want 0x96", good[0])
	}
	bad := map[string][]byte{
		// 0x96, mask 0x09 (device, metric), consts, dmask, smask, steps, frames
		"masks overlap":             {0x96, 0x09, 0x92, 0xa1, 'd', 0xa1, 'm', 0x01, 0x00, 0x90, 0x90},
		"a str field by difference": {0x96, 0x08, 0x91, 0xa1, 'm', 0x01, 0x00, 0x90, 0x90},
		"a mask past the fields":    {0x96, 0x09, 0x92, 0xa1, 'd', 0xa1, 'm', 0xcf, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x90, 0x90},
		"steps missing":             {0x96, 0x09, 0x92, 0xa1, 'd', 0xa1, 'm', 0x00, 0x02, 0x90, 0x90},
		"a step not an int":         {0x96, 0x09, 0x92, 0xa1, 'd', 0xa1, 'm', 0x00, 0x02, 0x92, 0x01, 0xa1, 'x', 0x90},
		"cut after the masks":       {0x96, 0x09, 0x92, 0xa1, 'd', 0xa1, 'm', 0x00, 0x02},
		"four parts":                {0x94, 0x00, 0x90, 0x00, 0x90},
	}
	for name, b := range bad {
		t.Run(name, func(t *testing.T) {
			br, err := tier1.NewBlockReader(b, &d)
			if err != nil {
				return
			}
			for range br.Len() + 1 {
				f, err := br.Next()
				if err != nil {
					return
				}
				if f == nil {
					break
				}
			}
			t.Errorf("NewBlockReader(% x) read every frame", b)
		})
	}
	t.Run("a frame without its difference", func(t *testing.T) {
		// device and metric constant, seq by steps, ts by differences:
		// the second frame holds a nil for its ts.
		b := []byte{0x96, 0x09, 0x92, 0xa1, 'd', 0xa1, 'm', 0x04, 0x02, 0x92, 0x01, 0x01,
			0x92, 0x92, 0x0a, 0xca, 0x3f, 0x80, 0, 0, 0x92, 0xc0, 0xca, 0x3f, 0x80, 0, 0}
		br, err := tier1.NewBlockReader(b, &d)
		if err != nil {
			t.Fatal(err)
		}
		f, err := br.Next()
		if err != nil {
			t.Fatalf("first frame: %v", err)
		}
		if want := (tier1.Frame{tier1.Str("d"), tier1.Uint(1), tier1.Int(10), tier1.Str("m"), tier1.Float(1)}); !f.Equal(want) {
			t.Errorf("first frame %v, want %v", f, want)
		}
		if _, err := br.Next(); err == nil {
			t.Error("a nil difference was read")
		}
	})
}

// checkBlock reads block b with d: it holds frames, BlockLen counts them,
// and nothing follows the last.
func checkBlock(t testing.TB, b []byte, d *tier1.Descriptor, frames []tier1.Frame) {
	t.Helper()
	if got := tier1.BlockLen(b); got != len(frames) {
		t.Fatalf("BlockLen = %d, want %d", got, len(frames))
	}
	br, err := tier1.NewBlockReader(b, d)
	if err != nil {
		t.Fatalf("NewBlockReader of % x: %v", b, err)
	}
	for i, want := range frames {
		got, err := br.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !got.Equal(want) {
			t.Fatalf("frame %d = %v, want %v", i, got, want)
		}
	}
	if f, err := br.Next(); f != nil || err != nil {
		t.Fatalf("after the last frame: %v, %v", f, err)
	}
}

// stepsDescriptor is a routine with a uint, an int and an optional int
// field, for the blocks' second form.
func stepsDescriptor() tier1.Descriptor {
	return tier1.Descriptor{CapabilityID: "t", Version: "1", Fields: []tier1.Field{
		{Name: "dev", Type: tier1.TypeStr},
		{Name: "seq", Type: tier1.TypeUint},
		{Name: "ts", Type: tier1.TypeInt},
		{Name: "n", Type: tier1.TypeInt, Optional: true},
		{Name: "v", Type: tier1.TypeFloat},
	}}
}
