package commitlog_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/synapse-edge/synapse/internal/testutil/crashfs"
	"github.com/synapse-edge/synapse/store/commitlog"
)

var powerLossPoints = flag.Int("powerloss.points", 2000, "crash points TestPowerLoss recovers from")

// appended is one record as the workload appended it.
type appended struct {
	seq     uint64
	payload []byte
	start   int // crash points from which its write may be on disk
	acked   int // crash point from which it was acknowledged; -1 never
}

// trial is one workload's trace and what it appended.
type trial struct {
	fs          *crashfs.FS
	segSize     int64
	recs        []appended
	checkpoints [][2]int // {crash point, checkpoint seq}
}

// runTrial appends groups of random records through a crashFS, with
// checkpoints and trims, and now and then a failing fdatasync after
// which the log is closed and opened again.
func runTrial(t *testing.T, rng *rand.Rand) *trial {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "log")
	tr := &trial{fs: crashfs.New(), segSize: 1024 + rng.Int64N(8192)}
	var cp uint64
	open := func() *commitlog.Log {
		l, err := commitlog.Open(dir, commitlog.Options{FS: tr.fs, SegmentSize: tr.segSize, Checkpoint: cp})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := open()
	var lastAcked uint64
	for range 40 + rng.IntN(40) {
		group := make([][]byte, 1+rng.IntN(6))
		for i := range group {
			group[i] = make([]byte, rng.IntN(1200))
			for j := range group[i] {
				group[i][j] = byte(rng.Uint32())
			}
		}
		start, next := tr.fs.Len(), l.Next()
		failSync := rng.IntN(25) == 0
		if failSync {
			tr.fs.SetFail(func(o crashfs.Op) bool { return o.Kind == crashfs.Sync })
		}
		first, err := l.Append(group)
		tr.fs.SetFail(nil)
		if failSync {
			if !errors.Is(err, commitlog.ErrPoisoned) && err == nil {
				t.Fatal("Append with a failing fdatasync succeeded")
			}
			for i, p := range group {
				tr.recs = append(tr.recs, appended{seq: next + uint64(i), payload: p, start: start, acked: -1})
			}
			if _, err := l.Append(group); !errors.Is(err, commitlog.ErrPoisoned) {
				t.Fatalf("Append after a failed fdatasync: %v, want ErrPoisoned", err)
			}
			l.Close()
			l = open()
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range group {
			tr.recs = append(tr.recs, appended{seq: first + uint64(i), payload: p, start: start, acked: tr.fs.Len()})
		}
		lastAcked = first + uint64(len(group)) - 1
		if rng.IntN(6) == 0 {
			cp += uint64(rng.Int64N(int64(lastAcked-cp) + 1))
			tr.checkpoints = append(tr.checkpoints, [2]int{tr.fs.Len(), int(cp)})
			if err := l.Trim(cp); err != nil {
				t.Fatal(err)
			}
		}
	}
	l.Close()
	return tr
}

// recoverAt builds the files of a power cut at crash point n, checks and
// recovers them, and verifies that every acknowledged record is there
// exactly once and every other record found is whole.
func (tr *trial) recoverAt(t *testing.T, n int, rng *rand.Rand, scramble bool) error {
	dir := t.TempDir()
	tr.fs.Image(t, dir, n, rng, scramble)
	var cp uint64
	for _, c := range tr.checkpoints {
		if c[0] <= n {
			cp = uint64(c[1])
		}
	}
	if _, err := commitlog.Check(dir, cp, nil); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	opts := commitlog.Options{SegmentSize: tr.segSize, Checkpoint: cp}
	l, err := commitlog.Open(dir, opts)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	got := map[uint64][]byte{}
	verify := func() error {
		clear(got)
		want := cp + 1
		if err := l.Replay(cp, func(seq uint64, p []byte) error {
			if seq != want {
				return fmt.Errorf("replay gave record %d, want %d", seq, want)
			}
			want++
			got[seq] = bytes.Clone(p)
			return nil
		}); err != nil {
			return err
		}
		for _, r := range tr.recs {
			if r.seq <= cp {
				continue
			}
			p, ok := got[r.seq]
			if r.acked >= 0 && r.acked <= n && (!ok || !bytes.Equal(p, r.payload)) {
				return fmt.Errorf("acknowledged record %d lost or changed (present %v)", r.seq, ok)
			}
		}
		for seq, p := range got {
			whole := false
			for _, r := range tr.recs {
				whole = whole || r.seq == seq && r.start < n && bytes.Equal(r.payload, p)
			}
			if !whole && !bytes.Equal(p, []byte("after")) {
				return fmt.Errorf("record %d was never appended whole before the crash", seq)
			}
		}
		return nil
	}
	if err := verify(); err != nil {
		l.Close()
		return err
	}
	// The log goes on where recovery cut it, and opens again clean.
	if _, err := l.Append([][]byte{[]byte("after")}); err != nil {
		return err
	}
	l.Close()
	if rep, err := commitlog.Check(dir, cp, nil); err != nil || rep.TornBytes != 0 {
		return fmt.Errorf("check after recovery: %+v, %v", rep, err)
	}
	if l, err = commitlog.Open(dir, opts); err != nil {
		return fmt.Errorf("open after recovery: %w", err)
	}
	defer l.Close()
	return verify()
}

// TestPowerLoss cuts the power at random points of random workloads
// (-powerloss.points of them, 2,000 by default) and recovers from each.
func TestPowerLoss(t *testing.T) {
	points := *powerLossPoints
	if testing.Short() {
		points = 200
	}
	const perTrial = 50
	for i := 0; i*perTrial < points; i++ {
		seed := uint64(i)
		rng := rand.New(rand.NewPCG(seed, 27))
		tr := runTrial(t, rng)
		for j := range perTrial {
			n := rng.IntN(tr.fs.Len() + 1)
			scramble := j%2 == 1
			if err := tr.recoverAt(t, n, rng, scramble); err != nil {
				t.Fatalf("trial %d (seed %d), crash after %d of %d operations (scramble %v): %v", i, seed, n, tr.fs.Len(), scramble, err)
			}
		}
	}
}
