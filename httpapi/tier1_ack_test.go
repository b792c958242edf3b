package httpapi

import (
	"bytes"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/wire"
)

// TestAppendAckMsgpack: the hand-written encoding of an answer is byte for
// byte what wire.Msgpack makes of the same tier1Ack.
func TestAppendAckMsgpack(t *testing.T) {
	var acks []tier1Ack
	for _, n := range []int{0, 1, 127, 128, 255, 256, 65535, 65536, 1<<31 - 1} {
		acks = append(acks, tier1Ack{OK: true, Accepted: n})
	}
	for _, l := range []int{1, 31, 32, 255, 256, 65535, 65536} {
		id := strings.Repeat("b", l)
		acks = append(acks, tier1Ack{OK: true, Accepted: 1, BatchID: id}, tier1Ack{OK: true, Accepted: 3, BatchID: id, Duplicate: true})
	}
	acks = append(acks, tier1Ack{}, tier1Ack{Duplicate: true}, tier1Ack{BatchID: "é-ü"})
	for _, a := range acks {
		want, err := wire.Msgpack.Marshal(&a)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendAckMsgpack([]byte{0xff}, &a); !bytes.Equal(got[1:], want) || got[0] != 0xff {
			t.Errorf("ack %+.60v: got %x, want %x", a, got, want)
		}
	}
}
