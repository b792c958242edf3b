package tier1

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestByDevice: byDevice orders like a stable sort by (device, ts), for
// frames in order, round-robin, shuffled, with few devices and with more
// than its linear search handles.
func TestByDevice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, devices := range []int{1, 3, 16, 33, 200} {
		for _, shape := range []string{"sorted", "round-robin", "shuffled", "late ts"} {
			t.Run(fmt.Sprintf("%d devices, %s", devices, shape), func(t *testing.T) {
				var fs []blockFrame
				for i := range 500 {
					d := i % devices
					if shape == "sorted" {
						d = i * devices / 500
					}
					ts := int64(i / devices)
					if shape == "late ts" && i%7 == 0 {
						ts -= 3
					}
					fs = append(fs, blockFrame{ts: ts, dev: fmt.Sprintf("dev-%03d", d), f: Frame{Uint(uint64(i))}})
				}
				if shape == "shuffled" {
					rng.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
				}
				want := slices.Clone(fs)
				slices.SortStableFunc(want, func(x, y blockFrame) int {
					if c := strings.Compare(x.dev, y.dev); c != 0 {
						return c
					}
					return cmp.Compare(x.ts, y.ts)
				})
				got := byDevice(slices.Clone(fs))
				if len(got) != len(want) {
					t.Fatalf("%d frames, want %d", len(got), len(want))
				}
				for i := range want {
					if got[i].dev != want[i].dev || got[i].ts != want[i].ts || !got[i].f.Equal(want[i].f) {
						t.Fatalf("frame %d: %s %d %v, want %s %d %v", i, got[i].dev, got[i].ts, got[i].f, want[i].dev, want[i].ts, want[i].f)
					}
				}
			})
		}
	}
}

// TestBlocksOfSize: blocksOf cuts a device's run of MaxBlockBytes to
// uncutBlockBytes into blocks of at most about MaxBlockBytes, keeping every
// frame once and in order; a larger run stays whole, and a frame larger
// than MaxBlockBytes is a block of its own.
func TestBlocksOfSize(t *testing.T) {
	d := Telemetry()
	in := &Ingestor{}
	for _, c := range []struct {
		name    string
		devices int
		frames  int
		unit    string
	}{
		{"one device, a thousand frames", 1, 1000, "degC"},
		{"one device, three hundred frames", 1, 300, "degC"},
		{"ten devices", 10, 1000, "degC"},
		{"a few small frames", 3, 12, "degC"},
		{"frames larger than a block", 2, 6, strings.Repeat("u", 2*MaxBlockBytes)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var fs []blockFrame
			size := 0
			for i := range c.frames {
				dev := fmt.Sprintf("site-0003/gateway-0042/sensor-%03d", i%c.devices)
				// A ts field that jumps about (ts is stored by difference
				// otherwise): the frames keep their size.
				f := Frame{Str(dev), Uint(uint64(i)), Int(int64(i) * 1000 * (1 - 2*int64(i%2)) << 40), Str("temperature.ambient"), Float(20 + float64(i%100)/8), Str(c.unit)}
				if i%2 == 1 && c.unit == "degC" {
					f[5] = Str("degF") // not a constant field of the block
				}
				fs = append(fs, blockFrame{ts: int64(i) * 1000, dev: dev, f: f})
				size += len(AppendFrame(nil, f))
			}
			blocks := in.blocksOf(&d, slices.Clone(fs), size)
			var got []blockFrame
			for _, b := range blocks {
				if b.n > 1 && len(b.data) > MaxBlockBytes*11/10 && len(b.data) < uncutBlockBytes {
					t.Errorf("a block of %d frames is %d bytes, over about %d and under %d", b.n, len(b.data), MaxBlockBytes, uncutBlockBytes)
				}
				br, err := NewBlockReader(b.data, &d)
				if err != nil || br.Len() != b.n {
					t.Fatalf("block: %v, %d frames, want %d", err, br.Len(), b.n)
				}
				for range b.n {
					f, err := br.Next()
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, blockFrame{ts: b.ts, dev: b.dev, f: f})
				}
			}
			want := byDevice(fs)
			if len(got) != len(want) {
				t.Fatalf("%d frames in %d blocks, want %d", len(got), len(blocks), len(want))
			}
			for i := range want {
				if got[i].dev != want[i].dev || !got[i].f.Equal(want[i].f) {
					t.Fatalf("frame %d: %s %v, want %s %v", i, got[i].dev, got[i].f, want[i].dev, want[i].f)
				}
			}
			switch {
			case c.frames == 1000 && c.devices == 1 && len(blocks) != 1:
				t.Errorf("a thousand frames of one device in %d blocks, want 1 (an overflow node)", len(blocks))
			case c.frames == 300 && len(blocks) < 3:
				t.Errorf("three hundred frames of one device in %d blocks: not cut", len(blocks))
			}
		})
	}
}

// The blocks of a write are its own: a later write, which encodes into
// the same scratch, leaves them as they were.
func TestBlocksOfOwnTheirBytes(t *testing.T) {
	d := Telemetry()
	in := &Ingestor{}
	mk := func(dev string, n int) ([]blockFrame, int) {
		var fs []blockFrame
		size := 0
		for i := range n {
			f := Frame{Str(dev), Uint(uint64(i)), Int(int64(i) * 1000), Str("m"), Float(float64(i) / 4)}
			fs = append(fs, blockFrame{ts: int64(i) * 1000, dev: dev, f: f})
			size += len(AppendFrame(nil, f))
		}
		return fs, size
	}
	fa, sa := mk("first", 50)
	a := in.blocksOf(&d, fa, sa)
	saved := make([][]byte, len(a))
	for i, b := range a {
		saved[i] = slices.Clone(b.data)
	}
	for range 3 {
		fb, sb := mk("second-device-with-a-longer-name", 80)
		in.blocksOf(&d, fb, sb)
	}
	for i, b := range a {
		if !bytes.Equal(b.data, saved[i]) {
			t.Fatalf("block %d of the first write changed under later writes", i)
		}
	}
}
