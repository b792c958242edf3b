// Package eventhub delivers tasks' events, once they are durable, to the
// subscribers of a task or of every task, without ever blocking the
// engine that publishes them: a subscriber that falls too far behind is
// dropped, and catches up from the store.
package eventhub

import (
	"sync"

	"github.com/synapse-edge/synapse/wire"
)

// subBuffer is how many events a subscriber may fall behind before it is
// dropped; a dropped subscriber catches up from the store.
const subBuffer = 256

// Subscription receives a task's events after they are durable.
type Subscription struct {
	// C delivers events in order. It is closed when the subscriber fell too
	// far behind (Lagged is then true) or when Close is called.
	C      chan *wire.Event
	lagged bool
	hub    *Hub
	taskID string
	once   sync.Once
}

// Lagged reports whether the channel was closed because the reader was too
// slow; the reader should reload events from the store.
func (s *Subscription) Lagged() bool {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.lagged
}

// Close stops delivery.
func (s *Subscription) Close() {
	s.once.Do(func() { s.hub.remove(s) })
}

// Hub is the subscriptions by task id. The zero value is ready.
type Hub struct {
	mu   sync.Mutex
	subs map[string][]*Subscription
}

// Subscribe delivers the future events of taskID (All: of every task).
func (h *Hub) Subscribe(taskID string) *Subscription {
	s := &Subscription{C: make(chan *wire.Event, subBuffer), hub: h, taskID: taskID}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[string][]*Subscription{}
	}
	h.subs[taskID] = append(h.subs[taskID], s)
	return s
}

func (h *Hub) remove(s *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.detach(s)
}

// detach removes s and closes its channel; h.mu is held.
func (h *Hub) detach(s *Subscription) {
	list := h.subs[s.taskID]
	for i, x := range list {
		if x == s {
			list = append(list[:i], list[i+1:]...)
			close(s.C)
			break
		}
	}
	if len(list) == 0 {
		delete(h.subs, s.taskID)
	} else {
		h.subs[s.taskID] = list
	}
}

// All is the key of the subscriptions to every task's events (no task id
// has a NUL).
const All = "\x00all"

// Publish delivers the events of taskID without blocking.
func (h *Hub) Publish(taskID string, evs []*wire.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) == 0 {
		return
	}
	var slow []*Subscription
	for _, list := range [2][]*Subscription{h.subs[taskID], h.subs[All]} {
		for _, s := range list {
			for _, e := range evs {
				select {
				case s.C <- e:
					continue
				default:
				}
				s.lagged = true
				slow = append(slow, s)
				break
			}
		}
	}
	for _, s := range slow {
		h.detach(s)
	}
}

// CloseAll ends every subscription (shutdown).
func (h *Hub) CloseAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, list := range h.subs {
		for _, s := range append([]*Subscription(nil), list...) {
			h.detach(s)
		}
	}
}
