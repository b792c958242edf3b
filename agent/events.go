package agent

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
	hub    *hub
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

type hub struct {
	mu   sync.Mutex
	subs map[string][]*Subscription
}

func (h *hub) subscribe(taskID string) *Subscription {
	s := &Subscription{C: make(chan *wire.Event, subBuffer), hub: h, taskID: taskID}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[string][]*Subscription{}
	}
	h.subs[taskID] = append(h.subs[taskID], s)
	return s
}

func (h *hub) remove(s *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.detach(s)
}

// detach removes s and closes its channel; h.mu is held.
func (h *hub) detach(s *Subscription) {
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

// allTasks is the hub key of the subscriptions to every task's events
// (no task id has a NUL).
const allTasks = "\x00all"

// SubscribeAll delivers the future events of every task, as Subscribe
// does for one.
func (a *Agent) SubscribeAll() *Subscription { return a.eng.hub.subscribe(allTasks) }

// publish delivers events without blocking.
func (h *hub) publish(taskID string, evs []*wire.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) == 0 {
		return
	}
	var slow []*Subscription
	for _, list := range [2][]*Subscription{h.subs[taskID], h.subs[allTasks]} {
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

// closeAll ends every subscription (shutdown).
func (h *hub) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, list := range h.subs {
		for _, s := range append([]*Subscription(nil), list...) {
			h.detach(s)
		}
	}
}
