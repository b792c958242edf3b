package clocktest_test

import (
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/clocktest"
)

func TestAdvanceRunsDueCallbacksInOrder(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c := clocktest.New(start)
	var got []int
	c.AfterFunc(3*time.Second, func() { got = append(got, 3) })
	c.AfterFunc(1*time.Second, func() { got = append(got, 1) })
	stopped := c.AfterFunc(2*time.Second, func() { got = append(got, 2) })
	if !stopped.Stop() || stopped.Stop() {
		t.Error("Stop should report true once, then false")
	}
	c.Advance(2 * time.Second)
	if len(got) != 1 || got[0] != 1 {
		t.Fatalf("after 2 s: %v, want [1]", got)
	}
	c.Advance(time.Second)
	if len(got) != 2 || got[1] != 3 {
		t.Fatalf("after 3 s: %v, want [1 3]", got)
	}
	if c.Pending() != 0 || !c.Now().Equal(start.Add(3*time.Second)) {
		t.Errorf("pending %d, now %v", c.Pending(), c.Now())
	}
}

// Each callback sees the clock at its own time, and one that a callback
// sets due within the advance runs in it too.
func TestAdvanceStepsThroughCallbacks(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c := clocktest.New(start)
	var at []time.Duration
	c.AfterFunc(time.Second, func() {
		at = append(at, c.Now().Sub(start))
		c.AfterFunc(2*time.Second, func() { at = append(at, c.Now().Sub(start)) })
		c.AfterFunc(time.Hour, func() { at = append(at, c.Now().Sub(start)) })
	})
	c.Advance(5 * time.Second)
	if len(at) != 2 || at[0] != time.Second || at[1] != 3*time.Second {
		t.Fatalf("callbacks saw %v, want [1s 3s]", at)
	}
	if c.Pending() != 1 || !c.Now().Equal(start.Add(5*time.Second)) {
		t.Errorf("pending %d, now %v; want 1 (the hour's), start+5s", c.Pending(), c.Now())
	}
}
