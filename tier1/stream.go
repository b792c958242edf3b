package tier1

import "sync"

// Stream stores the batches one sender pipelines (a WebSocket, say) and
// answers them in the order they came. One store write of the stream is
// under way at a time; the batches that arrive meanwhile wait and then go
// together in the next (see Store), so a sender of many small batches
// pays the store's per-write costs once per group of them. Every answer
// still waits for the commit that holds its batch.
//
// The reader of the sender calls Add for each batch and End after the
// last; one goroutine runs Pump, which hands the batches to the store and
// the answers to the sender.
type Stream struct {
	in     *Ingestor
	window int

	mu sync.Mutex
	// items are the unanswered batches in arrival order, n of them from
	// head: a ring that grows up to window as batches wait.
	items   []streamItem
	head, n int
	seq     uint64 // of the last batch added
	// unsent are the prepared batches not handed to the store yet, the
	// last of them number unsentLast; flying those of the store write
	// under way (up to flyingLast). Writes finish in order, so every
	// batch up to storedThrough is answerable.
	unsent, flying         []*Pending
	unsentLast, flyingLast uint64
	storedThrough          uint64
	inflight               bool
	ended                  bool
	// The pump sleeps on wake, the reader on room (when the window is
	// full); whoever changes what they wait for pokes them.
	pumpIdle, readerWaits bool
	wake, room            chan struct{}
	stored                func() // the callback of the store writes, made once
}

// Answer is the outcome of one batch of a stream: Err is its refusal or
// the storage error, else Result holds what was stored. Its strings (the
// batch_id) are valid only during the call of Pump's answer that hands it
// over: clone what is kept.
type Answer struct {
	Result Result
	Err    error
}

// streamItem is one batch of a stream waiting for its answer.
type streamItem struct {
	p   *Pending // nil when refused on arrival
	err error    // the refusal
	seq uint64   // arrival number
}

// NewStream starts a stream that lets up to window batches wait for their
// answers: Add waits beyond that.
func (in *Ingestor) NewStream(window int) *Stream {
	st := &Stream{in: in, window: max(window, 1), items: make([]streamItem, min(16, max(window, 1))),
		wake: make(chan struct{}, 1), room: make(chan struct{}, 1)}
	st.stored = st.onStored
	return st
}

// Add queues the next batch: p from Prepare, or the error that refused it
// (p nil). It waits while window batches wait for their answers.
func (st *Stream) Add(p *Pending, refused error) {
	st.mu.Lock()
	for st.n == len(st.items) {
		if len(st.items) < st.window {
			grown := make([]streamItem, min(2*len(st.items), st.window))
			for i := range st.n {
				grown[i] = st.items[(st.head+i)%len(st.items)]
			}
			st.items, st.head = grown, 0
			break
		}
		st.readerWaits = true
		st.mu.Unlock()
		<-st.room
		st.mu.Lock()
	}
	st.seq++
	st.items[(st.head+st.n)%len(st.items)] = streamItem{p: p, err: refused, seq: st.seq}
	st.n++
	if p != nil {
		st.unsent = append(st.unsent, p)
		st.unsentLast = st.seq
	}
	st.poke()
	st.mu.Unlock()
}

// End tells the pump that nothing more will be added.
func (st *Stream) End() {
	st.mu.Lock()
	st.ended = true
	st.poke()
	st.mu.Unlock()
}

// poke wakes a sleeping pump; st.mu is held.
func (st *Stream) poke() {
	if st.pumpIdle {
		st.pumpIdle = false
		st.wake <- struct{}{}
	}
}

// onStored makes the batches of the store write under way answerable; it
// runs on the store's writer goroutine.
func (st *Stream) onStored() {
	st.mu.Lock()
	st.storedThrough = st.flyingLast
	st.inflight = false
	st.poke()
	st.mu.Unlock()
}

// answerable reports whether the oldest unanswered batch can be answered;
// st.mu is held.
func (st *Stream) answerable() bool {
	if st.n == 0 {
		return false
	}
	it := &st.items[st.head]
	return it.p == nil || it.seq <= st.storedThrough
}

// pumpAnswers is the most answers Pump hands over at once.
const pumpAnswers = 512

// Pump hands the added batches to the store, one write at a time, and
// calls answer with the answers of the batches, in order, as their writes
// finish: those ready together in one call (at most 512). answer must not
// keep the slice nor the strings of its answers: once it returns, the
// Pendings answered are recycled, and their bytes reused.
// Pump returns once End was called and every batch added is answered.
func (st *Stream) Pump(answer func([]Answer)) {
	as := make([]Answer, 0, 16)
	var answered []*Pending // of as, recycled once answer returns
	st.mu.Lock()
	for {
		switch {
		case !st.inflight && len(st.unsent) > 0:
			st.unsent, st.flying = st.flying[:0], st.unsent
			st.flyingLast = st.unsentLast
			st.inflight = true
			group := st.flying
			st.mu.Unlock()
			st.in.Store(group, st.stored) // waits while the store's queue is full
			st.mu.Lock()
		case st.answerable():
			as, answered = as[:0], answered[:0]
			for st.answerable() && len(as) < pumpAnswers {
				it := &st.items[st.head]
				if it.p == nil {
					as = append(as, Answer{Err: it.err})
				} else {
					as = append(as, Answer{Result: it.p.Result, Err: it.p.Err})
					answered = append(answered, it.p)
				}
				*it = streamItem{}
				st.head = (st.head + 1) % len(st.items)
				st.n--
			}
			if st.readerWaits {
				st.readerWaits = false
				st.room <- struct{}{}
			}
			st.mu.Unlock()
			answer(as)
			for i, p := range answered {
				p.recycle()
				answered[i] = nil
			}
			st.mu.Lock()
		case st.ended && st.n == 0:
			st.mu.Unlock()
			return
		default:
			st.pumpIdle = true
			st.mu.Unlock()
			<-st.wake
			st.mu.Lock()
		}
	}
}
