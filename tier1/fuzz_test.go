package tier1_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/tier1"
)

// FuzzDecodeBatch checks that DecodeBatch never panics, that its errors
// carry a sentinel, and that what it accepts survives a round trip:
// re-encoded with AppendBatch it decodes to equal frames, and that
// encoding is stable.
func FuzzDecodeBatch(f *testing.F) {
	f.Add(exampleHex(f))
	m := mixed()
	f.Add(tier1.AppendBatch(nil, m.CapabilityID, m.Version, "id", []tier1.Frame{
		{tier1.Str("s"), tier1.Int(-300), tier1.Uint(70000), tier1.Float(0.1), tier1.Bool(true), tier1.Bin([]byte("xyz"))},
		{tier1.Str("t"), tier1.Null(), tier1.Uint(1), tier1.Float(2)},
	}, &m))
	for _, typ := range []string{"int", "uint", "float", "str", "bin", "bool"} {
		f.Add(oneValueBatch(f, typ, "d3 80 00 00 00 00 00 00 00"))
		f.Add(oneValueBatch(f, typ, "cb 3f b9 99 99 99 99 99 9a"))
		f.Add(oneValueBatch(f, typ, "c4 02 c3 a9"))
	}
	f.Add(unhex(f, "93 b1 73796e617073652e74656c656d65747279 a5 312e302e30 dd ff ff ff ff"))
	f.Add(unhex(f, strings.Repeat("91", 100)+"c0"))

	reg := testRegistry(f)
	lim := tier1.Limits{MaxFrames: 1000, MaxStrLen: 256, MaxBinLen: 1024}
	f.Fuzz(func(t *testing.T, b []byte) {
		batch, err := tier1.DecodeBatch(b, reg, lim)
		if err != nil {
			var fe *tier1.FrameError
			if !errors.As(err, &fe) && !errors.Is(err, tier1.ErrMalformedBatch) && !errors.Is(err, tier1.ErrUnknownRoutine) &&
				!errors.Is(err, tier1.ErrVersionMismatch) && !errors.Is(err, tier1.ErrTooManyFrames) {
				t.Fatalf("error without a sentinel: %v", err)
			}
			if batch != nil {
				t.Fatalf("a batch and an error: %v", err)
			}
			return
		}
		enc := tier1.AppendBatch(nil, batch.CapabilityID, batch.Version, batch.BatchID, batch.Frames, batch.Desc)
		again, err := tier1.DecodeBatch(enc, reg, lim)
		if err != nil {
			t.Fatalf("re-encoded batch %x refused: %v", enc, err)
		}
		if again.CapabilityID != batch.CapabilityID || again.BatchID != batch.BatchID || len(again.Frames) != len(batch.Frames) {
			t.Fatalf("header changed: %+v, then %+v", batch, again)
		}
		for i := range batch.Frames {
			if !again.Frames[i].Equal(batch.Frames[i]) || len(again.Frames[i]) != len(batch.Frames[i]) {
				t.Fatalf("frame %d = %v, then %v", i, batch.Frames[i], again.Frames[i])
			}
		}
		if enc2 := tier1.AppendBatch(nil, again.CapabilityID, again.Version, again.BatchID, again.Frames, again.Desc); !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not stable:\n%x\n%x", enc, enc2)
		}
	})
}
