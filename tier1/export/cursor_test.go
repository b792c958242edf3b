package export_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/tier1/export"
)

// TestCursorsAcrossRestart: two exports keep their own cursors across a
// restart (a slow one holds nothing of the other); an export added with
// start all gets the history the log holds, one with new does not, one
// with since gets what was queued from then on; the log keeps what any
// export still needs and no more.
func TestCursorsAcrossRestart(t *testing.T) {
	a := openAgent(t, "")
	up := newUpstream()
	fast := export.Config{Name: "fast", Endpoint: "http://127.0.0.1:1", Priority: 1, BandwidthBytesPerS: 1 << 20}
	slow := export.Config{Name: "slow", Endpoint: "http://127.0.0.1:2", Priority: 9, BandwidthBytesPerS: 4096, Order: "fifo"}
	s, stop := a.start(up, 0, fast, slow)
	for i := range 6 {
		a.ingest("d", uint64(i*100), 50)
	}
	testutil.Eventually(t, 10*time.Second, "fast sent all", func() bool { return status(s, "fast").BacklogFrames == 0 })
	stop()
	slowSent := len(up.ids("http://127.0.0.1:2"))
	if slowSent >= 6 {
		t.Fatalf("slow (4 kB/s) sent %d batches of ~1.8 kB in a moment", slowSent)
	}
	a.close()

	mid := time.Now()
	time.Sleep(10 * time.Millisecond)
	a = openAgent(t, a.path)
	defer a.close()
	a.in.EnableOutbox()     // as Open does, before ingest starts
	a.ingest("d", 9000, 50) // u7, before any export runs again
	up2 := newUpstream()
	all := export.Config{Name: "all", Endpoint: "http://127.0.0.1:3", Start: "all"}
	neu := export.Config{Name: "new", Endpoint: "http://127.0.0.1:4", Start: "new"}
	since := export.Config{Name: "since", Endpoint: "http://127.0.0.1:5", Start: "since", Since: mid.UTC().Format(time.RFC3339Nano)}
	slow.BandwidthBytesPerS = 0
	s, stop = a.start(up2, 0, fast, slow, all, neu, since)
	a.ingest("d", 9100, 50) // u8
	for _, name := range []string{"fast", "slow", "all", "new", "since"} {
		testutil.Eventually(t, 10*time.Second, name+" done", func() bool { return status(s, name).BacklogFrames == 0 })
	}
	stop()
	want := map[string][]string{
		"http://127.0.0.1:1": {"u7", "u8"},
		"http://127.0.0.1:4": {"u8"},
		"http://127.0.0.1:5": {"u7", "u8"},
	}
	for _, id := range []string{"u1", "u2", "u3", "u4", "u5", "u6", "u7", "u8"}[slowSent:] {
		want["http://127.0.0.1:2"] = append(want["http://127.0.0.1:2"], id)
	}
	// all: everything the log holds, which is what slow had not sent
	// (fast was past it all; the log keeps what any export needs).
	want["http://127.0.0.1:3"] = want["http://127.0.0.1:2"]
	for to, w := range want {
		if got := up2.ids(to); !slices.Equal(got, w) {
			t.Errorf("%s after the restart got %v, want %v", to, got, w)
		}
	}
	if st := status(s, "fast"); st.SentFrames != 400 {
		t.Errorf("fast: sent %d frames, want 400 over both runs", st.SentFrames)
	}
	conserved(t, s, map[string]uint64{"fast": 400, "slow": 400, "all": uint64(50 * len(want["http://127.0.0.1:3"])), "new": 50, "since": 100})
	// Everyone is past everything: the log is empty.
	var n int
	_ = a.db.View(func(tx *store.Tx) error { n = tier1.OutboxLen(tx); return nil })
	if n != 0 {
		t.Errorf("%d batches left in the log, every export is past them", n)
	}
}

// TestPrunedCountsDropped: entries pruned from the log before an export
// sent them (retention, quotas: here deleted as they would) count as
// dropped, in the status at once and in the cursor once passed.
func TestPrunedCountsDropped(t *testing.T) {
	a := openAgent(t, "")
	defer a.close()
	up := newUpstream()
	up.down = true
	s, stop := a.start(up, 0, export.Config{Name: "x", Endpoint: "http://127.0.0.1:1", Start: "all", MaxBackoffMS: 5})
	for i := range 5 {
		a.ingest("d", uint64(i*10), 3)
	}
	if err := a.db.Update(context.Background(), func(tx *store.Tx) error { _, err := tier1.AckOutboxBefore(tx, 3, 10); return err }); err != nil {
		t.Fatal(err)
	}
	if st := status(s, "x"); st.DroppedFrames != 6 || st.BacklogFrames != 9 {
		t.Errorf("after pruning 2 batches: dropped %d queued %d, want 6 9", st.DroppedFrames, st.BacklogFrames)
	}
	conserved(t, s, map[string]uint64{"x": 15})
	up.mu.Lock()
	up.down = false
	up.mu.Unlock()
	testutil.Eventually(t, 10*time.Second, "sent", func() bool { return status(s, "x").BacklogFrames == 0 })
	stop()
	if st := status(s, "x"); st.DroppedFrames != 6 || st.SentFrames != 9 {
		t.Errorf("dropped %d sent %d, want 6 9", st.DroppedFrames, st.SentFrames)
	}
	conserved(t, s, map[string]uint64{"x": 15})
}

// TestPauseResume: a paused export sends nothing, says paused, and stays
// paused across a restart until resumed.
func TestPauseResume(t *testing.T) {
	a := openAgent(t, "")
	up := newUpstream()
	c := export.Config{Name: "x", Endpoint: "http://127.0.0.1:1"}
	s, stop := a.start(up, 0, c)
	if err := s.Pause(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if err := s.Pause(context.Background(), "nope"); err == nil {
		t.Error("pausing an unknown export succeeded")
	}
	a.ingest("d", 1, 5)
	time.Sleep(300 * time.Millisecond)
	if st := status(s, "x"); st.State != export.StatePaused || st.BacklogFrames != 5 || len(up.ids(c.Endpoint)) != 0 {
		t.Errorf("paused: %+v, %d sent", st, len(up.ids(c.Endpoint)))
	}
	stop()
	a.close()
	a = openAgent(t, a.path)
	defer a.close()
	s, stop = a.start(up, 0, c)
	defer stop()
	if st := status(s, "x"); st.State != export.StatePaused {
		t.Errorf("after a restart: state %s, want paused", st.State)
	}
	if err := s.Resume(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "sent after resume", func() bool { return status(s, "x").BacklogFrames == 0 })
	if got := up.ids(c.Endpoint); !slices.Equal(got, []string{"u1"}) {
		t.Errorf("sent %v", got)
	}
}

// TestMigrateUplinkQueue: the queue of a file from before the export log
// (bare batches) is given its headers, and an export with start all
// sends it, in order.
func TestMigrateUplinkQueue(t *testing.T) {
	a := openAgent(t, "")
	defer a.close()
	d := tier1.Telemetry()
	for i := range 3 {
		fs := []tier1.Frame{{tier1.Str("d"), tier1.Uint(uint64(i)), tier1.Int(1), tier1.Str("m"), tier1.Float(1), tier1.Str("C")}}
		err := a.db.Update(context.Background(), func(tx *store.Tx) error {
			_, err := tier1.EnqueueOutbox(tx, func(seq uint64) []byte {
				return tier1.AppendBatch(nil, d.CapabilityID, d.Version, "u"+string(rune('0'+seq)), fs, &d)
			})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	up := newUpstream()
	s, stop := a.start(up, 0, export.FromUplink(&tier1.UplinkConfig{Endpoint: "ws://127.0.0.1:1"}))
	defer stop()
	a.ingest("d", 10, 2)
	testutil.Eventually(t, 10*time.Second, "sent", func() bool { return status(s, "uplink").BacklogFrames == 0 })
	if got := up.ids("ws://127.0.0.1:1"); !slices.Equal(got, []string{"u1", "u2", "u3", "u4"}) {
		t.Errorf("sent %v, want [u1 u2 u3 u4]", got)
	}
	conserved(t, s, map[string]uint64{"uplink": 5})
}
