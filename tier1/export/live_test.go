package export_test

import (
	"slices"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/tier1/export"
)

// TestLiveFirst: after an outage, batches queued once the upstream is
// back go out before the backlog, which drains after; each lane keeps its
// order and nothing is sent twice. With fifo the order is the queue's.
func TestLiveFirst(t *testing.T) {
	for _, order := range []string{export.OrderLiveFirst, export.OrderFIFO} {
		t.Run(order, func(t *testing.T) {
			a := openAgent(t, "")
			defer a.close()
			up := newUpstream()
			up.down = true
			const to = "http://127.0.0.1:1"
			s, stop := a.start(up, 0, export.Config{Name: "x", Endpoint: to, Start: "all", BatchSize: 1, MaxBackoffMS: 20, Order: order})
			for i := range 60 {
				a.ingest("d", uint64(i*10), 5) // u1..u60: the backlog
			}
			time.Sleep(1100 * time.Millisecond) // older than a second: a backlog
			up.mu.Lock()
			up.down, up.delay = false, 20*time.Millisecond
			up.mu.Unlock()
			// Three sent: the runner saw the upstream back and (live_first)
			// split the lanes after the first.
			testutil.Eventually(t, 10*time.Second, "the upstream back", func() bool { return len(up.ids(to)) >= 3 })
			a.ingest("live", 1, 5) // u61
			testutil.Eventually(t, 20*time.Second, "drained", func() bool { return status(s, "x").BacklogFrames == 0 })
			stop()
			got := up.ids(to)
			if len(got) != 61 {
				t.Fatalf("%d batches sent, want 61: %v", len(got), got)
			}
			at := slices.Index(got, "u61")
			var rest []string
			for _, id := range got {
				if id != "u61" {
					rest = append(rest, id)
				}
			}
			for i, id := range rest {
				if want := "u" + itoa(i+1); id != want {
					t.Fatalf("backlog out of order at %d: %v", i, rest)
				}
			}
			if order == export.OrderLiveFirst && at > 30 {
				t.Errorf("the live batch went out %dth of 61: behind the backlog", at+1)
			}
			if order == export.OrderFIFO && at != 60 {
				t.Errorf("fifo: the live batch went out %dth of 61, want last", at+1)
			}
			conserved(t, s, map[string]uint64{"x": 305})
		})
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
