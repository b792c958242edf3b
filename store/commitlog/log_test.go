package commitlog_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/internal/testutil/crashfs"
	"github.com/synapse-edge/synapse/store/commitlog"
)

// vectors are known answers of the record layout (format.go), their
// CRC-32C computed apart from this code.
var vectors = []struct {
	seq     uint64
	back    uint32
	payload string
	hex     string
}{
	{1, 0, "", "000000001371daf1000000000000000100000000"},
	{2, 1, "hello", "00000005799e843200000000000000020000000168656c6c6f"},
	{0x0102030405060708, 7, "\x00\xff", "00000002f0d985d401020304050607080000000700ff"},
}

func TestRecordVectors(t *testing.T) {
	for _, v := range vectors {
		got := hex.EncodeToString(commitlog.AppendRecord(nil, v.seq, v.back, []byte(v.payload)))
		if got != v.hex {
			t.Errorf("AppendRecord(%d, %d, %q) = %s, want %s", v.seq, v.back, v.payload, got, v.hex)
		}
		raw, _ := hex.DecodeString(v.hex)
		rec, n, err := commitlog.ReadRecord(append(raw, 0, 0))
		if err != nil || n != len(raw) || rec.Seq != v.seq || rec.Back != v.back || string(rec.Payload) != v.payload {
			t.Errorf("ReadRecord(%s) = %+v, %d, %v", v.hex, rec, n, err)
		}
	}
}

func TestReadRecordErrors(t *testing.T) {
	good := commitlog.AppendRecord(nil, 5, 0, []byte("payload"))
	flip := bytes.Clone(good)
	flip[len(flip)-1] ^= 1
	long := bytes.Clone(good)
	long[0] = 0xff
	zeroSeq := commitlog.AppendRecord(nil, 0, 0, []byte("x"))
	for _, c := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, commitlog.ErrEnd},
		{"zeros", make([]byte, 64), commitlog.ErrEnd},
		{"short header", good[:10], commitlog.ErrShort},
		{"short payload", good[:len(good)-1], commitlog.ErrShort},
		{"flipped bit", flip, commitlog.ErrChecksum},
		{"too long", long, commitlog.ErrTooLarge},
		{"seq 0", zeroSeq, commitlog.ErrZeroSeq},
	} {
		if _, _, err := commitlog.ReadRecord(c.b); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

func openLog(t *testing.T, dir string, opts commitlog.Options) *commitlog.Log {
	t.Helper()
	l, err := commitlog.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func replayAll(t *testing.T, l *commitlog.Log, after uint64) []string {
	t.Helper()
	var out []string
	if err := l.Replay(after, func(seq uint64, p []byte) error {
		out = append(out, string(p))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAppendReplayTrim(t *testing.T) {
	dir := t.TempDir()
	opts := commitlog.Options{SegmentSize: 256}
	l := openLog(t, dir, opts)
	var want []string
	for i := range 30 {
		p := strings.Repeat(string(rune('a'+i%26)), 10+i*3)
		first, err := l.Append([][]byte{[]byte(p), []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		if first != uint64(2*i+1) {
			t.Fatalf("append %d: first %d, want %d", i, first, 2*i+1)
		}
		want = append(want, p, "x")
	}
	if st := l.Stats(); st.Syncs.Load() < 30 || st.Appends.Load() != 30 || st.Records.Load() != 60 {
		t.Errorf("stats: %d syncs, %d appends, %d records", st.Syncs.Load(), st.Appends.Load(), st.Records.Load())
	}
	l.Close()
	// The segment header's layout, from the file.
	raw, err := os.ReadFile(filepath.Join(dir, "0000000000000001.log"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := hex.EncodeToString(raw[:commitlog.SegmentHeaderSize]), "53594e4c4f47000100000000000000010dbb9beb"; got != want {
		t.Errorf("segment header %s, want %s", got, want)
	}
	l = openLog(t, dir, opts)
	if got := replayAll(t, l, 0); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("replay after reopen: %d records, want %d", len(got), len(want))
	}
	if got := replayAll(t, l, 40); len(got) != 20 || got[0] != want[40] {
		t.Fatalf("replay after 40: %d records", len(got))
	}
	segs := func() int { names, _ := commitlog.OS.List(dir); return len(names) }
	before := segs()
	if err := l.Trim(40); err != nil {
		t.Fatal(err)
	}
	if after := segs(); after >= before || after == 0 {
		t.Errorf("trim: %d segments, %d before", after, before)
	}
	rep, err := commitlog.Check(dir, 40, nil)
	if err != nil || rep.Last != 60 || rep.First > 41 || rep.TornBytes != 0 {
		t.Errorf("check: %+v, %v", rep, err)
	}
	if _, err := commitlog.Check(dir, 70, nil); !errors.Is(err, commitlog.ErrCorrupt) {
		t.Errorf("check with a checkpoint past the end: %v, want ErrCorrupt", err)
	}
	if _, err := commitlog.Check(dir, 0, nil); !errors.Is(err, commitlog.ErrCorrupt) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("check with records before the log's start missing: %v", err)
	}
	// A group larger than a segment gets a segment of its own size.
	big := bytes.Repeat([]byte{7}, 1000)
	if _, err := l.Append([][]byte{big}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append([][]byte{make([]byte, commitlog.MaxRecord+1)}); !errors.Is(err, commitlog.ErrTooLarge) {
		t.Errorf("append over MaxRecord: %v", err)
	}
	if got := replayAll(t, l, 60); len(got) != 1 || got[0] != string(big) {
		t.Errorf("replay of the big record: %d records", len(got))
	}
}

// TestCorruption: a damaged record with a later group after it stops
// the open with an error naming the segment and offset; the same damage
// in the last group is a torn tail, cut off.
func TestCorruption(t *testing.T) {
	build := func(t *testing.T) (string, []byte) {
		dir := t.TempDir()
		l := openLog(t, dir, commitlog.Options{SegmentSize: 4096})
		for i := range 4 {
			if _, err := l.Append([][]byte{[]byte(strings.Repeat("r", 50+i)), []byte("second")}); err != nil {
				t.Fatal(err)
			}
		}
		l.Close()
		raw, err := os.ReadFile(filepath.Join(dir, "0000000000000001.log"))
		if err != nil {
			t.Fatal(err)
		}
		return dir, raw
	}
	t.Run("before the tail", func(t *testing.T) {
		dir, raw := build(t)
		off := commitlog.SegmentHeaderSize + 30 // in the first record
		raw[off] ^= 0x40
		if err := os.WriteFile(filepath.Join(dir, "0000000000000001.log"), raw, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := commitlog.Open(dir, commitlog.Options{})
		var ce *commitlog.CorruptError
		if !errors.As(err, &ce) || ce.Segment != "0000000000000001.log" || ce.Offset != commitlog.SegmentHeaderSize {
			t.Fatalf("open: %v, want a CorruptError at 0000000000000001.log offset 20", err)
		}
		if !strings.Contains(err.Error(), "segment 0000000000000001.log offset 20") {
			t.Errorf("error text %q names no segment and offset", err)
		}
		if _, err := commitlog.Check(dir, 0, nil); !errors.Is(err, commitlog.ErrCorrupt) {
			t.Errorf("check: %v", err)
		}
	})
	t.Run("beyond a live check's bound", func(t *testing.T) {
		// A live check reads while the writer appends: record 3 half
		// written with record 5 already after it is what it may see. Up to
		// record 2 the log is whole; Scan of all of it is corrupt.
		dir, raw := build(t)
		first := commitlog.SegmentHeaderSize
		n1 := int(binary.BigEndian.Uint32(raw[first:])) + commitlog.RecordHeaderSize
		n2 := int(binary.BigEndian.Uint32(raw[first+n1:])) + commitlog.RecordHeaderSize
		raw[first+n1+n2+30] ^= 0x40 // in record 3, the second group's first
		if err := os.WriteFile(filepath.Join(dir, "0000000000000001.log"), raw, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := commitlog.Scan(dir, 0, nil, nil); !errors.Is(err, commitlog.ErrCorrupt) {
			t.Fatalf("scan of the whole log: %v, want corrupt", err)
		}
		var seqs []uint64
		rep, err := commitlog.ScanUpTo(dir, 0, 2, nil, func(seq uint64, _ []byte) error { seqs = append(seqs, seq); return nil })
		if err != nil || rep.Last != 2 || len(seqs) != 2 {
			t.Fatalf("scan up to record 2: %+v, %v, records %v; want records 1 and 2, no error", rep, err, seqs)
		}
	})
	t.Run("torn tail", func(t *testing.T) {
		dir, raw := build(t)
		// The last group: records 7 and 8; damage the second of them.
		end := len(bytes.TrimRight(raw, "\x00"))
		raw[end-2] ^= 0x40
		if err := os.WriteFile(filepath.Join(dir, "0000000000000001.log"), raw, 0o600); err != nil {
			t.Fatal(err)
		}
		rep, err := commitlog.Check(dir, 0, nil)
		if err != nil || rep.TornBytes == 0 || rep.Last != 7 {
			t.Fatalf("check: %+v, %v; want a torn tail after record 7", rep, err)
		}
		l := openLog(t, dir, commitlog.Options{})
		if l.Next() != 8 || l.Stats().TornBytes.Load() == 0 {
			t.Fatalf("next %d, torn %d", l.Next(), l.Stats().TornBytes.Load())
		}
		if got := replayAll(t, l, 0); len(got) != 7 {
			t.Errorf("replay: %d records, want 7", len(got))
		}
	})
}

// TestPoisoned: a failed fdatasync acknowledges nothing and every later
// append fails; a new Open recovers.
func TestPoisoned(t *testing.T) {
	dir := t.TempDir()
	fs := crashfs.New()
	l := openLog(t, dir, commitlog.Options{FS: fs})
	if _, err := l.Append([][]byte{[]byte("one")}); err != nil {
		t.Fatal(err)
	}
	fs.SetFail(func(o crashfs.Op) bool { return o.Kind == crashfs.Sync })
	if _, err := l.Append([][]byte{[]byte("two")}); err == nil {
		t.Fatal("append with a failing fdatasync succeeded")
	}
	fs.SetFail(nil)
	if _, err := l.Append([][]byte{[]byte("three")}); !errors.Is(err, commitlog.ErrPoisoned) {
		t.Fatalf("append after the failure: %v, want ErrPoisoned", err)
	}
	l.Close()
	l = openLog(t, dir, commitlog.Options{FS: fs})
	if got := replayAll(t, l, 0); len(got) == 0 || got[0] != "one" {
		t.Errorf("after reopen: %q", got)
	}
}
