package tier1_test

import (
	"bytes"
	"testing"

	"github.com/synapse-edge/synapse/tier1"
)

// FuzzOutboxEntry checks that ParseOutboxEntry and BatchFrames never
// panic on any stored value, that a header they accept survives a round
// trip, and that BatchFrames agrees with DecodeBatch on what both accept.
func FuzzOutboxEntry(f *testing.F) {
	d := tier1.Telemetry()
	b := tier1.AppendBatch(nil, d.CapabilityID, d.Version, "u1", []tier1.Frame{
		{tier1.Str("d"), tier1.Uint(1), tier1.Int(2), tier1.Str("m"), tier1.Float(1), tier1.Str("C")}}, &d)
	f.Add(tier1.AppendOutboxEntry(nil, tier1.OutboxEntry{Frames: 1, CumFrames: 7, CumBytes: 900, At: 1_800_000_000}, b))
	f.Add(b)                       // an older file's bare batch
	f.Add([]byte{0xc1, 0, 0, 0})   // a header cut short
	f.Add([]byte{0x93, 0xa1, 'x'}) // a batch cut short
	reg, _ := tier1.NewRegistry(d)
	f.Fuzz(func(t *testing.T, v []byte) {
		h, batch, ok := tier1.ParseOutboxEntry(v)
		if ok {
			if again := tier1.AppendOutboxEntry(nil, h, batch); !bytes.Equal(again, v) {
				t.Fatalf("round trip: %x != %x", again, v)
			}
		} else if !bytes.Equal(batch, v) {
			t.Fatal("an entry without a header must come back whole")
		}
		n, err := tier1.BatchFrames(batch)
		if dec, derr := tier1.DecodeBatch(batch, reg, tier1.Limits{}); derr == nil && (err != nil || n != len(dec.Frames)) {
			t.Fatalf("BatchFrames %d, %v; DecodeBatch has %d frames", n, err, len(dec.Frames))
		}
	})
}
