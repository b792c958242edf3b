package kv

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// A known write-set: put "k"="v" in t1/cap, delete "k" there, create and
// delete bucket t1, set t1's sequence to 300.
var (
	wsT1    = childPath("", []byte("t1"))
	wsT1Cap = childPath(wsT1, []byte("cap"))
	wsOps   = []op{
		{kind: opPut, path: wsT1Cap, key: []byte("k"), val: []byte("v")},
		{kind: opDelete, path: wsT1Cap, key: []byte("k")},
		{kind: opCreateBucket, path: wsT1},
		{kind: opDeleteBucket, path: wsT1},
		{kind: opSetSeq, path: wsT1, seq: 300},
	}
	wsHex = "01" +
		"01" + "07" + "027431" + "03636170" + "016b" + "0176" +
		"02" + "07" + "027431" + "03636170" + "016b" +
		"03" + "03" + "027431" +
		"04" + "03" + "027431" +
		"05" + "03" + "027431" + "ac02"
)

func encodeOps(ops []op) []byte {
	ws := []byte{WriteSetVersion}
	for _, o := range ops {
		ws = appendOp(ws, o)
	}
	return ws
}

func TestWriteSetKnownAnswer(t *testing.T) {
	if got := hex.EncodeToString(encodeOps(wsOps)); got != wsHex {
		t.Fatalf("encoding\n got %s\nwant %s", got, wsHex)
	}
	raw, _ := hex.DecodeString(wsHex)
	var got []op
	if err := decodeWriteSet(raw, func(o op) error { got = append(got, o); return nil }); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(encodeOps(got), raw) || len(got) != len(wsOps) {
		t.Fatalf("decoded %+v", got)
	}
	for _, bad := range []string{"", "02", "0106", "01010127", "0101022a31016b0176", "0105027431"} {
		b, _ := hex.DecodeString(bad)
		if err := decodeWriteSet(b, func(op) error { return nil }); err == nil {
			t.Errorf("write-set %s decoded", bad)
		}
	}
}

// FuzzWriteSet: whatever a record holds, decoding it fails cleanly or
// gives ops that encode and decode back to themselves and replay onto a
// layer.
func FuzzWriteSet(f *testing.F) {
	raw, _ := hex.DecodeString(wsHex)
	f.Add(raw)
	f.Add([]byte{WriteSetVersion})
	f.Fuzz(func(t *testing.T, ws []byte) {
		var ops []op
		if err := decodeWriteSet(ws, func(o op) error { ops = append(ops, o); return nil }); err != nil {
			return
		}
		// Lengths may be written longer than needed; the ops are the same.
		enc := encodeOps(ops)
		var again []op
		if err := decodeWriteSet(enc, func(o op) error { again = append(again, o); return nil }); err != nil {
			t.Fatalf("re-encoded %x does not decode: %v", enc, err)
		}
		if got := encodeOps(again); !bytes.Equal(got, enc) || len(again) != len(ops) {
			t.Fatalf("re-encoded %x, then %x", enc, got)
		}
		if err := NewLayer().Replay(ws); err != nil {
			t.Fatal(err)
		}
	})
}

func BenchmarkWriteSetEncode(b *testing.B) {
	b.SetBytes(int64(len(encodeOps(wsOps))))
	var ws []byte
	for b.Loop() {
		ws = ws[:0]
		ws = append(ws, WriteSetVersion)
		for _, o := range wsOps {
			ws = appendOp(ws, o)
		}
	}
}
