package tier1_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

// groupIngestor is an ingestor of the telemetry and mixed routines,
// queueing for an uplink, over a fresh store whose commits fail while
// *fail is set.
func groupIngestor(t *testing.T, now time.Time, maxInflight int64, fail *atomic.Bool) (*tier1.Ingestor, *store.DB) {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "g.db"), store.Options{Fault: func() error {
		if fail.Load() {
			return errors.New("disk on fire")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close(context.Background()) })
	reg, err := tier1.NewRegistry(tier1.Telemetry(), mixed())
	if err != nil {
		t.Fatal(err)
	}
	return tier1.NewIngestor(reg, db, tier1.IngestConfig{Uplink: true, MaxInflightBytes: maxInflight,
		Now: func() time.Time { return now }}), db
}

// store runs in.Store and waits for it.
func storeAll(t *testing.T, in *tier1.Ingestor, ps []*tier1.Pending) {
	t.Helper()
	done := make(chan struct{})
	in.Store(ps, func() { close(done) })
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("Store did not finish")
	}
}

// records counts the stored records (blocks) of a routine.
func records(t *testing.T, db *store.DB, capID string) int {
	t.Helper()
	n := 0
	if err := db.View(func(tx *store.Tx) error {
		return store.RawRecords("t1").Raw(tx).Bucket([]byte(capID)).Scan(nil, func(_, _ []byte) error { n++; return nil })
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStoreGroup: batches prepared one by one and stored together take one
// commit and share blocks per device; a batch_id stored before and one
// repeated inside the group are duplicates, stored once; every batch gets
// its own result; upstream they go as one batch per routine.
func TestStoreGroup(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	var fail atomic.Bool
	in, db := groupIngestor(t, now, 0, &fail)
	ctx := context.Background()
	if _, err := in.Ingest(ctx, "s", "", batchAt("old", "d0", 0, now, 1)); err != nil {
		t.Fatal(err)
	}
	w := in.Watch(16, 1<<20)
	defer w.Close()

	// 100 one-frame batches of 4 devices, one of them repeating "old" and
	// one repeating "g-5"; a 100-frame batch; a batch of another routine.
	var ps []*tier1.Pending
	wantDup := map[int]bool{}
	prepare := func(body []byte) {
		t.Helper()
		p, err := in.Prepare(ctx, "s", "", body)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	for i := range 100 {
		id := fmt.Sprintf("g-%d", i)
		switch i {
		case 10:
			id = "old"
		case 50:
			id = "g-5"
		}
		wantDup[i] = i == 10 || i == 50
		prepare(batchAt(id, fmt.Sprintf("d%d", i%4), uint64(1000+i), now.Add(time.Duration(i)*time.Millisecond), 1))
	}
	prepare(batchAt("big", "big", 0, now, 100))
	m := mixed()
	prepare(tier1.AppendBatch(nil, m.CapabilityID, m.Version, "mx",
		[]tier1.Frame{{tier1.Str("m"), tier1.Null(), tier1.Uint(1), tier1.Float(2)}}, &m))

	commits := db.Stats().Commits.Load()
	storeAll(t, in, ps)
	if got := db.Stats().Commits.Load() - commits; got != 1 {
		t.Errorf("the group took %d commits, want 1", got)
	}
	for i, p := range ps {
		wantN := 1
		if i == 100 {
			wantN = 100
		}
		if p.Err != nil || p.Result.Accepted != wantN || p.Result.Duplicate != wantDup[i] {
			t.Errorf("batch %d: result %+v, err %v; want %d accepted, duplicate %v", i, p.Result, p.Err, wantN, wantDup[i])
		}
	}
	// Frames: the earlier one, 98 new single ones and the 100 of "big".
	keys, _ := allPages(t, in, tier1.FrameQuery{Limit: 1000})
	if len(keys) != 1+98+100 {
		t.Errorf("%d telemetry frames stored, want %d", len(keys), 1+98+100)
	}
	sort.Strings(keys)
	for i := 1; i < len(keys); i++ {
		if keys[i] == keys[i-1] {
			t.Errorf("frame %s stored twice", keys[i])
		}
	}
	// Records: the earlier batch, one block per device of the small
	// batches, one for "big".
	if got := records(t, db, tier1.Telemetry().CapabilityID); got != 1+4+1 {
		t.Errorf("%d telemetry records, want %d", got, 1+4+1)
	}
	if got := records(t, db, m.CapabilityID); got != 1 {
		t.Errorf("%d mixed records, want 1", got)
	}
	st, err := in.Stored(tier1.Telemetry().CapabilityID)
	if err != nil || st.Frames != 199 {
		t.Errorf("Stored = %+v, %v; want 199 frames", st, err)
	}
	// Upstream: the earlier batch, then the new batches of each routine
	// as one batch, their frames in the order they came.
	var queued [][]byte
	_ = db.View(func(tx *store.Tx) error { _, queued = tier1.OutboxFrom(tx, 0, 10, math.MaxInt); return nil })
	if len(queued) != 3 {
		t.Fatalf("%d batches queued upstream, want 3", len(queued))
	}
	reg, _ := tier1.NewRegistry(tier1.Telemetry(), m)
	var wantSeqs []uint64
	for i := range 100 {
		if !wantDup[i] {
			wantSeqs = append(wantSeqs, uint64(1000+i))
		}
	}
	for i := range 100 {
		wantSeqs = append(wantSeqs, uint64(i))
	}
	for i, want := range []struct {
		id   string
		seqs []uint64
	}{{tier1.Telemetry().CapabilityID, []uint64{0}}, {tier1.Telemetry().CapabilityID, wantSeqs}, {m.CapabilityID, nil}} {
		h, raw, ok := tier1.ParseOutboxEntry(queued[i])
		if !ok {
			t.Fatalf("queued batch %d has no log header", i)
		}
		b, err := tier1.DecodeBatch(raw, reg, tier1.Limits{})
		if err == nil && int(h.Frames) != len(b.Frames) {
			t.Errorf("queued batch %d: header says %d frames, the batch has %d", i, h.Frames, len(b.Frames))
		}
		if err != nil || b.CapabilityID != want.id || b.BatchID == "" {
			t.Fatalf("queued batch %d: %+v, %v", i, b, err)
		}
		if want.seqs == nil {
			continue
		}
		var seqs []uint64
		for _, f := range b.Frames {
			seqs = append(seqs, f.At(1).Uint())
		}
		if !slices.Equal(seqs, want.seqs) {
			t.Errorf("queued batch %d holds seqs %v, want %v", i, seqs, want.seqs)
		}
	}
	// The watcher sees each routine's part of the write once.
	frames := map[string]int{}
	for range 2 {
		select {
		case l := <-w.C:
			frames[l.Desc.CapabilityID] += l.Frames
			w.Release(l)
		case <-time.After(5 * time.Second):
			t.Fatal("watcher got less than two lives")
		}
	}
	if frames[tier1.Telemetry().CapabilityID] != 198 || frames[m.CapabilityID] != 1 {
		t.Errorf("watcher frames = %v, want 198 telemetry and 1 mixed", frames)
	}
	if c := &in.C; c.Batches.Load() != 1+102 || c.Duplicates.Load() != 2 || c.Frames.Load() != 1+98+100+1 {
		t.Errorf("counters: %d batches, %d duplicates, %d frames", c.Batches.Load(), c.Duplicates.Load(), c.Frames.Load())
	}
}

// TestStoreFailure: when the commit fails every batch of the write gets
// commit_outcome_unknown (the store cannot tell whether a failed commit
// reached the disk; here it did not), nothing of them is stored (a later
// try stores them), and their room in the in-flight budget is given back.
func TestStoreFailure(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	var fail atomic.Bool
	// The budget holds four one-frame batches (charged 512 bytes and
	// 1.5 times their size each: less than 1 KiB).
	in, db := groupIngestor(t, now, 4<<10, &fail)
	for round := range 3 {
		fail.Store(round < 2)
		var ps []*tier1.Pending
		for i := range 4 {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			p, err := in.Prepare(ctx, "s", "", batchAt(fmt.Sprintf("f-%d", i), "d", uint64(i), now, 1))
			cancel()
			if err != nil {
				t.Fatalf("round %d: prepare %d: %v (budget not given back?)", round, i, err)
			}
			ps = append(ps, p)
		}
		storeAll(t, in, ps)
		for i, p := range ps {
			switch {
			case round < 2 && (p.Err == nil || wire.AsError(p.Err).Code != wire.CodeCommitUnknown):
				t.Errorf("round %d, batch %d: err %v, want %s", round, i, p.Err, wire.CodeCommitUnknown)
			case round == 2 && (p.Err != nil || p.Result.Duplicate):
				t.Errorf("round %d, batch %d: %+v, %v; want stored", round, i, p.Result, p.Err)
			}
		}
		if got, want := records(t, db, tier1.Telemetry().CapabilityID), map[bool]int{true: 0, false: 1}[round < 2]; got != want {
			t.Errorf("round %d: %d records, want %d", round, got, want)
		}
	}
	if got := in.C.Refused.Load(); got != 8 {
		t.Errorf("Refused = %d, want 8", got)
	}
}

// TestStream: a stream answers every batch once, in the order added, the
// refused ones with their refusal, while at most window wait; End returns
// the pump once all are answered.
func TestStream(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	var fail atomic.Bool
	in, _ := groupIngestor(t, now, 0, &fail)
	st := in.NewStream(4) // small: Add waits for the pump, the ring grows and wraps
	refusal := errors.New("not a batch")
	var got []tier1.Answer
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		st.Pump(func(as []tier1.Answer) {
			for _, a := range as { // the strings of an answer are the call's
				a.Result.BatchID = strings.Clone(a.Result.BatchID)
				got = append(got, a)
			}
		})
	}()
	const n = 60
	stored := uint64(0)
	for i := range n {
		if i%7 == 3 {
			st.Add(nil, refusal)
			continue
		}
		if i != 40 {
			stored++
		}
		id := fmt.Sprintf("s-%d", i)
		if i == 40 {
			id = "s-1" // a repeat
		}
		p, err := in.Prepare(context.Background(), "s", "", batchAt(id, "d", uint64(i), now.Add(time.Duration(i)), 1))
		if err != nil {
			t.Fatal(err)
		}
		st.Add(p, nil)
	}
	st.End()
	select {
	case <-pumped:
	case <-time.After(15 * time.Second):
		t.Fatal("Pump did not return after End")
	}
	if len(got) != n {
		t.Fatalf("%d answers, want %d", len(got), n)
	}
	for i, a := range got {
		switch {
		case i%7 == 3:
			if a.Err != refusal {
				t.Errorf("answer %d = %+v, want the refusal", i, a)
			}
		case a.Err != nil || a.Result.Accepted != 1 || a.Result.Duplicate != (i == 40):
			t.Errorf("answer %d = %+v, want 1 accepted (duplicate %v)", i, a, i == 40)
		case i != 40 && a.Result.BatchID != fmt.Sprintf("s-%d", i):
			t.Errorf("answer %d is for %q", i, a.Result.BatchID)
		}
	}
	if c := in.C.Frames.Load(); c != stored {
		t.Errorf("%d frames stored, want %d", c, stored)
	}
}

// TestStoreUplinkSplit: the batches of one write go upstream as batches of
// at most 4096 frames.
func TestStoreUplinkSplit(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	var fail atomic.Bool
	in, db := groupIngestor(t, now, 0, &fail)
	var ps []*tier1.Pending
	for i := range 5000 {
		p, err := in.Prepare(context.Background(), "s", "", batchAt("", "d", uint64(i), now.Add(time.Duration(i)), 1))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	storeAll(t, in, ps)
	var queued [][]byte
	_ = db.View(func(tx *store.Tx) error { _, queued = tier1.OutboxFrom(tx, 0, 10, math.MaxInt); return nil })
	reg, _ := tier1.NewRegistry(tier1.Telemetry())
	var sizes []int
	next := uint64(0)
	var cum uint64
	for i, q := range queued {
		h, raw, _ := tier1.ParseOutboxEntry(q)
		if h.CumFrames != cum {
			t.Errorf("queued batch %d: cum_frames %d, want %d", i, h.CumFrames, cum)
		}
		cum += uint64(h.Frames)
		b, err := tier1.DecodeBatch(raw, reg, tier1.Limits{})
		if err != nil {
			t.Fatalf("queued batch %d: %v", i, err)
		}
		sizes = append(sizes, len(b.Frames))
		for _, f := range b.Frames {
			if f.At(1).Uint() != next {
				t.Fatalf("queued batch %d: seq %d where %d was next", i, f.At(1).Uint(), next)
			}
			next++
		}
	}
	if !slices.Equal(sizes, []int{4096, 904}) {
		t.Errorf("queued batches of %v frames, want [4096 904]", sizes)
	}
}
