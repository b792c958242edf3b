package tier1

import (
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
