package agent_test

import (
	"testing"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// SubscribeAll delivers the events of every task, each task's in seq
// order, the same ones the store keeps.
func TestSubscribeAll(t *testing.T) {
	a := openAgent(t, testConfig(t), newFakeClock())
	sub := a.SubscribeAll()
	defer sub.Close()
	t1 := submit(t, a, "echo", `{"n":1}`)
	t2 := submit(t, a, "echo", `{"n":2}`)
	waitFinal(t, a, t1.ID)
	waitFinal(t, a, t2.ID)
	want := map[string]int{t1.ID: len(eventsOf(t, a, t1.ID)), t2.ID: len(eventsOf(t, a, t2.ID))}
	got := map[string]uint64{}
	timeout := time.After(10 * time.Second)
	for got[t1.ID] < uint64(want[t1.ID]) || got[t2.ID] < uint64(want[t2.ID]) {
		select {
		case e := <-sub.C:
			if _, ok := want[e.TaskID]; !ok || e.Seq != got[e.TaskID]+1 {
				t.Fatalf("event %+v after seq %d of its task", e, got[e.TaskID])
			}
			got[e.TaskID] = e.Seq
			if e.Seq == uint64(want[e.TaskID]) && e.Type != wire.EventComplete {
				t.Errorf("last event of %s is %s", e.TaskID, e.Type)
			}
		case <-timeout:
			t.Fatalf("after 10 s got up to %v of %v events", got, want)
		}
	}
}
