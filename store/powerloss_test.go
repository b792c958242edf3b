package store

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil/crashfs"
)

var storePowerLossPoints = flag.Int("store.powerloss.points", 2000, "crash points TestPowerLoss recovers the store from")

var (
	bucketPL  = []byte("pl")
	plRecords = RawRecords(string(bucketPL))
)

// plWrite is one write of the power-loss workload: its keys are "a"+seq
// and "b"+seq, seq being the bucket's sequence it took, and "b"+seq
// holds its index in the trial.
type plWrite struct {
	start int // crash points from which its record may be on disk
	acked int // crash point from which it was acknowledged; -1 never
	seq   uint64
}

// plCopy is the data file as one checkpoint left it.
type plCopy struct {
	point int // crash points from which the checkpoint may be in the file
	data  []byte
}

type plTrial struct {
	fs     *crashfs.FS
	writes []plWrite
	copies []plCopy
}

// runPLTrial writes through a store whose commit log goes through a
// crashfs, with small checkpoints (and trims) and now and then a failing
// fdatasync.
func runPLTrial(t *testing.T, rng *rand.Rand) *plTrial {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p.db")
	tr := &plTrial{fs: crashfs.New()}
	snap := func() {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Error(err)
			return
		}
		tr.copies = append(tr.copies, plCopy{point: tr.fs.Len(), data: data})
	}
	opts := Options{logFS: tr.fs, CheckpointInterval: time.Hour, CheckpointBytes: 2048 + rng.Int64N(8192), afterCheckpoint: snap}
	db, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	snap()
	for i := range 60 + rng.IntN(60) {
		failSync := rng.IntN(30) == 0
		if failSync {
			tr.fs.SetFail(func(o crashfs.Op) bool { return o.Kind == crashfs.Sync })
		}
		w := &plWrite{start: tr.fs.Len(), acked: -1}
		val := make([]byte, rng.IntN(600))
		err := db.Update(context.Background(), func(tx *Tx) error {
			// Through the raw records door, as tier-1's frames: its
			// writes are logged as every other.
			b, err := plRecords.CreateRaw(tx)
			if err != nil {
				return err
			}
			if w.seq, err = b.NextSequence(); err != nil {
				return err
			}
			k := binary.BigEndian.AppendUint64(nil, w.seq)
			// "c" counts the writes, put twice: the log holds the second
			// (kv.Coalescer).
			if err := b.Put([]byte("c"), []byte("stale")); err != nil {
				return err
			}
			if err := b.Put([]byte("c"), k); err != nil {
				return err
			}
			if err := b.Put(append([]byte("a"), k...), val); err != nil {
				return err
			}
			return b.Put(append([]byte("b"), k...), binary.BigEndian.AppendUint64(nil, uint64(i)))
		})
		tr.fs.SetFail(nil)
		switch {
		case failSync && err == nil:
			t.Fatal("a write whose fdatasync failed succeeded")
		case failSync && !errors.Is(err, ErrOutcomeUnknown):
			t.Fatalf("a write whose fdatasync failed: %v, want ErrOutcomeUnknown", err)
		case !failSync && err != nil:
			t.Fatal(err)
		case err == nil:
			w.acked = tr.fs.Len()
		}
		tr.writes = append(tr.writes, *w)
		if failSync {
			// The next write waits for the health probe's reopen, or
			// reopens the log itself.
			deadline := time.Now().Add(10 * time.Second)
			for db.Health() != nil && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	return tr
}

// TestPowerLoss cuts the power at random points of a store's life: the
// log as a crash there leaves it (every write not covered by a completed
// fdatasync dropped, the last one torn at a 512-byte boundary, or every
// unsynced sector kept or dropped at random), the file as the last
// checkpoint before it left it. After recovery every acknowledged write
// is there exactly once, the writes there are a prefix of those made
// (nothing half-applied, nothing after a lost one), and db check is
// clean.
func TestPowerLoss(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 2026))
	points := 0
	for points < *storePowerLossPoints {
		tr := runPLTrial(t, rng)
		for range 100 {
			n := rng.IntN(tr.fs.Len() + 1)
			plRecover(t, tr, n, rng)
			points++
		}
	}
}

func plRecover(t *testing.T, tr *plTrial, n int, rng *rand.Rand) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "p.db")
	// The file: the last checkpoint whose commit began before the crash
	// point; one that may have been under way at it, or not.
	c := 0
	for i, cp := range tr.copies {
		if cp.point < n || cp.point == n && rng.IntN(2) == 0 {
			c = i
		}
	}
	if err := os.WriteFile(path, tr.copies[c].data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(LogDir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	tr.fs.Image(t, LogDir(path), n, rng, rng.IntN(4) == 0)
	var cps []int
	for _, cp := range tr.copies {
		cps = append(cps, cp.point)
	}
	what := fmt.Sprintf("crash point %d of %d (checkpoint copy %d of %v, writes %v)", n, tr.fs.Len(), c, cps, tr.writes)
	db, err := Open(context.Background(), path, Options{CheckpointInterval: time.Hour})
	if err != nil {
		t.Fatalf("%s: open: %v", what, err)
	}
	defer db.Close(context.Background())
	var seq uint64
	present := map[uint64]uint64{} // seq → the index of the write
	err = db.View(func(tx *Tx) error {
		b := tx.root(bucketPL)
		if b == nil {
			return nil
		}
		seq = b.Sequence()
		if c := b.Get([]byte("c")); binary.BigEndian.Uint64(append(make([]byte, 8-min(len(c), 8)), c...)) != seq {
			return fmt.Errorf("counter %q, sequence %d", c, seq)
		}
		return b.ForEach(func(k, v []byte) error {
			if string(k) == "c" {
				return nil
			}
			if len(k) != 9 {
				return fmt.Errorf("key %q", k)
			}
			i := binary.BigEndian.Uint64(k[1:])
			if k[0] == 'b' {
				if len(v) != 8 {
					return fmt.Errorf("write %d: value %x", i, v)
				}
				present[i] = binary.BigEndian.Uint64(v)
			} else if b.Get(append([]byte("b"), k[1:]...)) == nil {
				return fmt.Errorf("write %d half there", i)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if uint64(len(present)) != seq {
		t.Fatalf("%s: %d writes there, sequence %d", what, len(present), seq)
	}
	there := map[uint64]bool{}
	for i := range seq {
		id, ok := present[i+1]
		if !ok {
			t.Fatalf("%s: %d writes there but not number %d", what, seq, i+1)
		}
		if there[id] {
			t.Fatalf("%s: write %d there twice", what, id)
		}
		there[id] = true
	}
	for i, w := range tr.writes {
		if w.acked >= 0 && w.acked <= n && present[w.seq] != uint64(i) {
			t.Fatalf("%s: acknowledged write %d (point %d, sequence %d) lost", what, i, w.acked, w.seq)
		}
		if w.start >= n && there[uint64(i)] {
			t.Fatalf("%s: write %d begun at point %d is there", what, i, w.start)
		}
	}
	rep, err := db.Check(context.Background())
	if err != nil || !rep.OK {
		t.Fatalf("%s: db check: %+v %v", what, rep, err)
	}
}
