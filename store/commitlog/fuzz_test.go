package commitlog_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/synapse-edge/synapse/store/commitlog"
)

// FuzzReadRecord: any bytes decode to a record that encodes back to the
// same bytes, or to one of the reader's errors.
func FuzzReadRecord(f *testing.F) {
	for _, v := range vectors {
		raw, _ := hex.DecodeString(v.hex)
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, n, err := commitlog.ReadRecord(b)
		if err != nil {
			for _, e := range []error{commitlog.ErrEnd, commitlog.ErrShort, commitlog.ErrChecksum, commitlog.ErrTooLarge, commitlog.ErrZeroSeq} {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("unexpected error %v", err)
		}
		if got := commitlog.AppendRecord(nil, rec.Seq, rec.Back, rec.Payload); !bytes.Equal(got, b[:n]) {
			t.Fatalf("round trip: %x, read from %x", got, b[:n])
		}
	})
}

// FuzzOpenSegment: a segment of any bytes after a valid header opens
// (its records replayable, in order) or is refused as corrupt.
func FuzzOpenSegment(f *testing.F) {
	var seed []byte
	for i, v := range vectors[:2] {
		seed = commitlog.AppendRecord(seed, uint64(i+1), v.back, []byte(v.payload))
	}
	f.Add(seed)
	f.Add(append(bytes.Clone(seed), make([]byte, 40)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		l, err := commitlog.Open(dir, commitlog.Options{SegmentSize: 64})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append([][]byte{nil}); err != nil {
			t.Fatal(err)
		}
		l.Close()
		name := filepath.Join(dir, "0000000000000001.log")
		raw, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, append(raw[:commitlog.SegmentHeaderSize], b...), 0o600); err != nil {
			t.Fatal(err)
		}
		l, err = commitlog.Open(dir, commitlog.Options{SegmentSize: 64})
		if err != nil {
			if !errors.Is(err, commitlog.ErrCorrupt) {
				t.Fatalf("open: %v, want ErrCorrupt", err)
			}
			return
		}
		defer l.Close()
		want := uint64(1)
		if err := l.Replay(0, func(seq uint64, _ []byte) error {
			if seq != want {
				t.Fatalf("replay gave %d, want %d", seq, want)
			}
			want++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if want != l.Next() {
			t.Fatalf("replayed up to %d, next %d", want-1, l.Next())
		}
	})
}
