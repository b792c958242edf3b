package wire

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"
	"testing"
)

// TestTier1AckAppendMsgpack: the hand-written encoding of an answer is
// byte for byte what Msgpack makes of the same Tier1Ack, with and without
// an error, appended after what dst holds.
func TestTier1AckAppendMsgpack(t *testing.T) {
	var acks []Tier1Ack
	counts := []int{0, 1, 127, 128, 255, 256, 65535, 65536, 1<<31 - 1}
	if strconv.IntSize == 64 {
		big := uint64(1) << 40 // the 64-bit format, where an int holds it
		counts = append(counts, int(big))
	}
	for _, n := range counts {
		acks = append(acks, Tier1Ack{OK: true, Accepted: n})
	}
	for _, l := range []int{1, 31, 32, 255, 256, 65535, 65536} {
		id := strings.Repeat("b", l)
		acks = append(acks, Tier1Ack{OK: true, Accepted: 1, BatchID: id}, Tier1Ack{OK: true, Accepted: 3, BatchID: id, Duplicate: true})
	}
	acks = append(acks, Tier1Ack{}, Tier1Ack{Duplicate: true}, Tier1Ack{BatchID: "é-ü"},
		Tier1Ack{BatchID: "b-9", Error: Errorf(CodeMessageFormatInvalid, "send each batch as one binary message")})
	for _, a := range acks {
		want, err := Msgpack.Marshal(&a)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.AppendMsgpack([]byte{0xff}); !bytes.Equal(got[1:], want) || got[0] != 0xff {
			t.Errorf("ack %+.60v: got %x, want %x", a, got, want)
		}
	}
	// A known answer: {"ok": true, "accepted": 1, "batch_id": "b1"}.
	a := Tier1Ack{OK: true, Accepted: 1, BatchID: "b1"}
	if got, want := a.AppendMsgpack(nil), []byte("\x83\xa2ok\xc3\xa8accepted\x01\xa8batch_id\xa2b1"); !bytes.Equal(got, want) {
		t.Errorf("got %x, want %x", got, want)
	}
}

// TestAppendWSBinary: a final, unmasked binary frame with the payload's
// length in the smallest of the three forms of RFC 6455 §5.2.
func TestAppendWSBinary(t *testing.T) {
	for _, c := range []struct {
		n   int
		hdr []byte
	}{
		{0, []byte{0x82, 0}},
		{125, []byte{0x82, 125}},
		{126, []byte{0x82, 126, 0, 126}},
		{65535, []byte{0x82, 126, 0xff, 0xff}},
		{65536, binary.BigEndian.AppendUint64([]byte{0x82, 127}, 65536)},
	} {
		p := bytes.Repeat([]byte{'x'}, c.n)
		got := AppendWSBinary([]byte("prev"), p)
		want := append(append([]byte("prev"), c.hdr...), p...)
		if !bytes.Equal(got, want) {
			t.Errorf("payload of %d: header %x, want %x", c.n, got[4:min(len(got), 4+len(c.hdr))], c.hdr)
		}
	}
}
