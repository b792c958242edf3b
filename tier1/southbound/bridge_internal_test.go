package southbound

import (
	"slices"
	"testing"
)

// TestAckQueueOrder: acknowledgements go out in arrival order, each once
// its message is dealt with; a dropped one (not stored for an error of the
// agent) is never sent and holds nothing back.
func TestAckQueueOrder(t *testing.T) {
	var q ackQueue
	var sent []int
	slot := func(i int) *ackSlot { return q.push(func() { sent = append(sent, i) }) }
	s := []*ackSlot{slot(0), slot(1), slot(2), slot(3)}
	q.done(s[2])
	if len(sent) != 0 {
		t.Fatalf("sent %v before the first message was dealt with", sent)
	}
	q.done(s[0])
	if !slices.Equal(sent, []int{0}) {
		t.Fatalf("sent %v, want [0]", sent)
	}
	q.drop(s[1])
	if !slices.Equal(sent, []int{0, 2}) {
		t.Fatalf("sent %v, want [0 2]", sent)
	}
	q.done(s[3])
	if !slices.Equal(sent, []int{0, 2, 3}) || len(q.q) != 0 {
		t.Fatalf("sent %v (queue %d), want [0 2 3] and nothing queued", sent, len(q.q))
	}
}
