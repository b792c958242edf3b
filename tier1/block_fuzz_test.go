package tier1_test

import (
	"encoding/binary"
	"testing"

	"github.com/synapse-edge/synapse/tier1"
)

// FuzzBlock checks both ways of a stored block. Its bytes, read as a
// block, never panic and never give more frames than the block says. Read
// as numbers, they make frames (a device, a seq, a ts, an optional int and
// a float, with the numbers as their differences) that AppendBlock stores
// and NewBlockReader gives back exactly, in either form.
func FuzzBlock(f *testing.F) {
	d := tier1.Telemetry()
	f.Add(tier1.AppendBlock(nil, []tier1.Frame{
		{tier1.Str("d"), tier1.Uint(1), tier1.Int(10), tier1.Str("m"), tier1.Float(1)},
		{tier1.Str("d"), tier1.Uint(2), tier1.Int(30), tier1.Str("m"), tier1.Float(2)},
		{tier1.Str("d"), tier1.Uint(3), tier1.Int(1 << 40), tier1.Str("m"), tier1.Float(2), tier1.Str("C")},
	}, len(d.Fields)))
	f.Add([]byte{0x96, 0x09, 0x92, 0xa1, 'd', 0xa1, 'm', 0x04, 0x02, 0x92, 0x01, 0x01,
		0x92, 0x92, 0x0a, 0xca, 0x3f, 0x80, 0, 0, 0x92, 0xc0, 0xca, 0x3f, 0x80, 0, 0})
	f.Add([]byte{0x96, 0x00, 0x90, 0x00, 0x02, 0x92, 0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Add(make([]byte, 64))
	od := stepsDescriptor()
	f.Fuzz(func(t *testing.T, b []byte) {
		if br, err := tier1.NewBlockReader(b, &d); err == nil {
			n := 0
			for {
				fr, err := br.Next()
				if err != nil || fr == nil {
					break
				}
				if n++; n > br.Len() {
					t.Fatalf("more frames than the block's %d", br.Len())
				}
			}
		}

		// The bytes as 8-byte steps of seq, ts and n, a frame of each 24.
		var frames []tier1.Frame
		var seq, ts, n uint64
		for i := 0; i+24 <= len(b) && len(frames) < 200; i += 24 {
			seq += binary.LittleEndian.Uint64(b[i:])
			ts += binary.LittleEndian.Uint64(b[i+8:])
			step := binary.LittleEndian.Uint64(b[i+16:])
			n += step
			opt := tier1.Int(int64(n))
			if step%3 == 0 {
				opt = tier1.Null()
			}
			frames = append(frames, tier1.Frame{tier1.Str("d"), tier1.Uint(seq), tier1.Int(int64(ts)), opt, tier1.Float(float64(step % 5))})
		}
		if len(frames) == 0 {
			return
		}
		checkBlock(t, tier1.AppendBlock(nil, frames, len(od.Fields)), &od, frames)
	})
}
