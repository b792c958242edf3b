package hil

import (
	"sync"
)

// RingSize is how many recent events are kept for resuming streams.
const RingSize = 256

// subBuffer is how many events a subscriber may fall behind before it is
// dropped (it then resumes from the ring).
const subBuffer = 64

// Subscription receives events as they happen.
type Subscription struct {
	// C delivers events in order. It is closed when the subscriber fell
	// too far behind (Lagged is then true), on Close, and when the
	// manager closes.
	C      chan Event
	f      *feed
	lagged bool
	once   sync.Once
}

// Lagged reports whether C was closed because the reader was too slow.
func (s *Subscription) Lagged() bool {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	return s.lagged
}

// Close stops delivery.
func (s *Subscription) Close() {
	s.once.Do(func() {
		s.f.mu.Lock()
		defer s.f.mu.Unlock()
		s.f.detach(s)
	})
}

// feed is the ring of recent events and the subscribers.
type feed struct {
	mu     sync.Mutex
	last   uint64 // id of the last event; ids start above base
	ring   []Event
	subs   map[*Subscription]struct{}
	closed bool
}

func newFeed(base uint64) *feed {
	return &feed{last: base, subs: map[*Subscription]struct{}{}}
}

// publish assigns the next id to ev and delivers it without blocking.
func (f *feed) publish(change string, r *Request) Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last++
	ev := Event{ID: f.last, Change: change, Request: r}
	if len(f.ring) == RingSize {
		copy(f.ring, f.ring[1:])
		f.ring = f.ring[:RingSize-1]
	}
	f.ring = append(f.ring, ev)
	for s := range f.subs {
		select {
		case s.C <- ev:
		default:
			s.lagged = true
			f.detach(s)
		}
	}
	return ev
}

// subscribe registers a subscriber. With resume, replay holds the events
// after the id after, and ok is false when the ring no longer reaches back
// that far (or after is unknown): the caller must reload the list.
func (f *feed) subscribe(after uint64, resume bool) (s *Subscription, replay []Event, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s = &Subscription{C: make(chan Event, subBuffer), f: f}
	if f.closed {
		close(s.C)
		return s, nil, true
	}
	f.subs[s] = struct{}{}
	if !resume || after == f.last {
		return s, nil, true
	}
	if after > f.last || len(f.ring) == 0 || after+1 < f.ring[0].ID {
		return s, nil, false
	}
	for _, ev := range f.ring {
		if ev.ID > after {
			replay = append(replay, ev)
		}
	}
	return s, replay, true
}

// detach removes s and closes its channel; f.mu is held.
func (f *feed) detach(s *Subscription) {
	if _, ok := f.subs[s]; ok {
		delete(f.subs, s)
		close(s.C)
	}
}

func (f *feed) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for s := range f.subs {
		f.detach(s)
	}
}
