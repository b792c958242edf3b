package kv

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// dump is everything a layer holds, in order.
func dump(l *Layer) string {
	var sb strings.Builder
	l.bkts.Ascend(func(s *bstate) bool {
		fmt.Fprintf(&sb, "B %q live=%v hide=%v seq=%v/%d\n", s.path, s.live, s.hide, s.seqSet, s.seq)
		return true
	})
	l.recs.Ascend(func(r *rec) bool {
		fmt.Fprintf(&sb, "R %q %q=%q del=%v\n", r.path, r.key, r.val, r.val == nil)
		return true
	})
	return sb.String()
}

func replayed(t testing.TB, ws []byte) string {
	t.Helper()
	l := NewLayer()
	if err := l.Replay(ws); err != nil {
		t.Fatalf("replay %x: %v", ws, err)
	}
	return dump(l)
}

// Repeated puts of one key, and sequences set again, are logged once
// with their last value; bucket ops stay in order.
func TestCoalesceKnown(t *testing.T) {
	stats := childPath("", []byte("t1_stats"))
	frames := childPath(childPath("", []byte("t1")), []byte("cap"))
	var ops []op
	for i := range 5 {
		ops = append(ops,
			op{kind: opSetSeq, path: frames, seq: uint64(i + 1)},
			op{kind: opPut, path: frames, key: []byte{byte(i)}, val: []byte("block")},
			op{kind: opPut, path: stats, key: []byte("cap"), val: []byte{byte(i)}})
	}
	ws := encodeOps(ops)
	var c Coalescer
	got, err := c.Coalesce(ws)
	if err != nil {
		t.Fatal(err)
	}
	want := encodeOps(append(append([]op{}, ops[1], ops[4], ops[7], ops[10]),
		op{kind: opSetSeq, path: frames, seq: 5}, ops[13], ops[14]))
	if !bytes.Equal(got, want) {
		t.Fatalf("coalesced\n got %x\nwant %x", got, want)
	}
	if replayed(t, got) != replayed(t, ws) {
		t.Fatal("coalesced write-set replays differently")
	}
	// Nothing moot: the write-set itself.
	one := encodeOps(ops[:2])
	if got, _ := c.Coalesce(one); &got[0] != &one[0] {
		t.Fatal("a write-set without moot ops was copied")
	}
	if _, err := c.Coalesce([]byte{2}); err == nil {
		t.Fatal("a bad write-set coalesced")
	}
}

// Random write-sets over a few buckets and keys, bucket ops among them,
// small (compared pairwise) and large (through the map): the coalesced
// write-set replays to the same layer.
func TestCoalesceReplaysTheSame(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	a := childPath("", []byte("a"))
	paths := []string{a, childPath(a, []byte("b")), childPath("", []byte("c"))}
	var c Coalescer
	for round := range 2000 {
		n := 1 + r.IntN(12)
		if round%4 == 0 {
			n = 20 + r.IntN(60)
		}
		var ops []op
		for range n {
			p := paths[r.IntN(len(paths))]
			k := []byte{byte('k' + r.IntN(3))}
			switch r.IntN(10) {
			case 0:
				ops = append(ops, op{kind: opCreateBucket, path: p})
			case 1:
				ops = append(ops, op{kind: opDeleteBucket, path: p})
			case 2, 3:
				ops = append(ops, op{kind: opSetSeq, path: p, seq: uint64(r.IntN(100))})
			case 4, 5:
				ops = append(ops, op{kind: opDelete, path: p, key: k})
			default:
				ops = append(ops, op{kind: opPut, path: p, key: k, val: []byte{byte(r.IntN(256))}})
			}
		}
		ws := encodeOps(ops)
		got, err := c.Coalesce(ws)
		if err != nil {
			t.Fatal(err)
		}
		if replayed(t, got) != replayed(t, ws) {
			t.Fatalf("round %d: %x coalesced to %x replays differently", round, ws, got)
		}
		if len(got) > len(ws) {
			t.Fatalf("round %d: coalesced is longer", round)
		}
	}
}

// FuzzCoalesce: any write-set that decodes coalesces to one that replays
// to the same layer.
func FuzzCoalesce(f *testing.F) {
	f.Add(encodeOps(wsOps))
	f.Add(encodeOps([]op{{kind: opPut, path: wsT1, key: []byte("k"), val: []byte("1")}, {kind: opPut, path: wsT1, key: []byte("k"), val: []byte("2")}}))
	f.Fuzz(func(t *testing.T, ws []byte) {
		if NewLayer().Replay(ws) != nil {
			return
		}
		var c Coalescer
		got, err := c.Coalesce(ws)
		if err != nil {
			t.Fatalf("coalesce of a write-set that replays: %v", err)
		}
		if replayed(t, got) != replayed(t, ws) {
			t.Fatalf("%x coalesced to %x replays differently", ws, got)
		}
	})
}

func BenchmarkCoalesce(b *testing.B) {
	stats := childPath("", []byte("t1_stats"))
	frames := childPath(childPath("", []byte("t1")), []byte("cap"))
	var ops []op
	for i := range 32 {
		ops = append(ops,
			op{kind: opSetSeq, path: frames, seq: uint64(i + 1)},
			op{kind: opPut, path: frames, key: []byte{byte(i)}, val: make([]byte, 90)},
			op{kind: opPut, path: stats, key: []byte("cap"), val: make([]byte, 16)})
	}
	ws := encodeOps(ops)
	var c Coalescer
	b.SetBytes(int64(len(ws)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Coalesce(ws); err != nil {
			b.Fatal(err)
		}
	}
}
