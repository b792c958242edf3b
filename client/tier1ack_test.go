package client_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

// The answers the fast path reads, encoded by the msgpack library (as the
// agent's wire.Tier1Ack.AppendMsgpack is checked to write them), and those it leaves
// to the decoder.
func TestDecodeTier1Ack(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name string
		in   any
		want client.Tier1Ack
	}{
		{"stored", map[string]any{"ok": true, "accepted": 1, "batch_id": "b-1"}, client.Tier1Ack{OK: true, Accepted: 1, BatchID: "b-1"}},
		{"no batch id", map[string]any{"ok": true, "accepted": 70000}, client.Tier1Ack{OK: true, Accepted: 70000}},
		{"duplicate", map[string]any{"ok": true, "accepted": 200, "batch_id": "b-2", "duplicate": true},
			client.Tier1Ack{OK: true, Accepted: 200, BatchID: "b-2", Duplicate: true}},
		{"long batch id", map[string]any{"ok": true, "accepted": 3, "batch_id": long}, client.Tier1Ack{OK: true, Accepted: 3, BatchID: long}},
		{"refused", map[string]any{"ok": false, "batch_id": "b-3", "error": map[string]any{"code": "c", "message": "m"}},
			client.Tier1Ack{BatchID: "b-3", Error: &client.Tier1AckError{Code: "c", Message: "m"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := wire.Msgpack.Marshal(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			ack := client.Tier1Ack{OK: true, Accepted: 99, BatchID: "stale", Duplicate: true} // reused: nothing may stay
			if err := client.DecodeTier1Ack(b, &ack); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(ack.OK, ack.Accepted, ack.BatchID, ack.Duplicate) != fmt.Sprint(tt.want.OK, tt.want.Accepted, tt.want.BatchID, tt.want.Duplicate) ||
				(ack.Error == nil) != (tt.want.Error == nil) || ack.Error != nil && (ack.Error.Code != tt.want.Error.Code || ack.Error.Message != tt.want.Error.Message) {
				t.Errorf("ack = %+v (error %+v), want %+v", ack, ack.Error, tt.want)
			}
		})
	}
	for _, bad := range [][]byte{nil, {0x81}, {0x81, 0xa2, 'o', 'k'}, {0x81, 0xa8, 'a', 'c', 'c', 'e', 'p', 't', 'e', 'd', 0xcd, 1}} {
		var ack client.Tier1Ack
		if err := client.DecodeTier1Ack(bad, &ack); err == nil {
			t.Errorf("DecodeTier1Ack(% x) = %+v, want an error", bad, ack)
		}
	}
}

// FuzzDecodeTier1Ack: the fast path and the msgpack decoder agree on
// whatever the fast path accepts.
func FuzzDecodeTier1Ack(f *testing.F) {
	for _, m := range []map[string]any{{"ok": true, "accepted": 1, "batch_id": "b-1"}, {"ok": true, "accepted": 300, "duplicate": true},
		{"ok": false, "error": map[string]any{"code": "c"}}} {
		b, err := wire.Msgpack.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast, slow client.Tier1Ack
		if err := client.DecodeTier1Ack(b, &fast); err != nil {
			return
		}
		if err := wire.Msgpack.Unmarshal(b, &slow); err != nil {
			return // the fast path is laxer about trailing keys' order only
		}
		if fast.OK != slow.OK || fast.Accepted != slow.Accepted || fast.BatchID != slow.BatchID || fast.Duplicate != slow.Duplicate {
			t.Errorf("% x: fast %+v, msgpack %+v", b, fast, slow)
		}
	})
}

// Queue and Flush: many batches in one write, each its own message and
// answer, in order, mixed with Send.
func TestE2ETier1StreamQueue(t *testing.T) {
	_, c := startAgent(t)
	d := tier1.Telemetry()
	s, err := c.DialTier1Stream(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const batches = 3000 // about 95 bytes each: several buffers full
	for i := range batches {
		frames := []tier1.Frame{{tier1.Str("dev-q"), tier1.Uint(uint64(i + 1)), tier1.Int(int64(i + 1)), tier1.Str("t"), tier1.Float(1)}}
		data := tier1.AppendBatch(nil, d.CapabilityID, d.Version, fmt.Sprintf("q-%d", i), frames, &d)
		if i == batches/2 {
			err = s.Send(data) // what Queue holds goes first
		} else {
			err = s.Queue(data)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	var ack client.Tier1Ack
	for i := range batches {
		data, err := s.Receive()
		if err != nil {
			t.Fatalf("ack %d: %v", i, err)
		}
		if err := client.DecodeTier1Ack(data, &ack); err != nil {
			t.Fatalf("ack %d: %v", i, err)
		}
		if !ack.OK || ack.Accepted != 1 || ack.BatchID != fmt.Sprintf("q-%d", i) {
			t.Fatalf("ack %d = %+v, want ok, 1 accepted, batch q-%d", i, ack, i)
		}
	}
	s.Close()
	if err := s.Queue([]byte{0x90}); err == nil {
		t.Error("Queue after Close succeeded")
	}
}
