package tier1

import (
	"sync"
	"sync/atomic"
)

// Live is what one store write stored of a routine, as a Watcher sees it:
// one batch, or the batches a sender pipelined that were stored together
// (see write.go); the routine and the frames as the blocks that were stored (see block.go; read them
// with NewBlockReader). The blocks are not modified after they are sent.
type Live struct {
	Desc   *Descriptor
	Blocks [][]byte
	Frames int
	Bytes  int // of the blocks
}

// Watcher receives the batches stored after Watch, for a live view of the
// ingest. A watcher that does not keep up misses batches rather than
// slowing the ingest: the store's writer never waits for it, and the
// batches queued for it hold at most maxBytes (plus one batch).
type Watcher struct {
	// C carries the batches; it is closed by Close. Release each one when
	// done with it.
	C        <-chan Live
	c        chan Live
	in       *Ingestor
	closed   bool // under in.watch.mu
	maxBytes int64
	queued   atomic.Int64 // bytes sent on C and not released
	// Missed counts the batches dropped because the watcher was behind.
	Missed atomic.Uint64
}

// watchers are an Ingestor's live watchers; n spares the ingest a lock
// when there are none.
type watchers struct {
	n   atomic.Int32
	mu  sync.Mutex
	set map[*Watcher]struct{}
}

// Watch starts a watcher whose channel holds up to buffer batches of at
// most maxBytes together.
func (in *Ingestor) Watch(buffer int, maxBytes int64) *Watcher {
	c := make(chan Live, max(buffer, 1))
	w := &Watcher{C: c, c: c, in: in, maxBytes: maxBytes}
	in.watch.mu.Lock()
	if in.watch.set == nil {
		in.watch.set = map[*Watcher]struct{}{}
	}
	in.watch.set[w] = struct{}{}
	in.watch.n.Store(int32(len(in.watch.set)))
	in.watch.mu.Unlock()
	return w
}

// Release gives back the room of a batch received from C.
func (w *Watcher) Release(l Live) { w.queued.Add(-int64(l.Bytes)) }

// Close stops the watcher and closes C; it is safe to call twice.
func (w *Watcher) Close() {
	ws := &w.in.watch
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	delete(ws.set, w)
	ws.n.Store(int32(len(ws.set)))
	close(w.c)
}

// publish hands a stored batch to the watchers without blocking.
func (in *Ingestor) publish(d *Descriptor, blocks []block) {
	if in.watch.n.Load() == 0 {
		return
	}
	l := Live{Desc: d, Blocks: make([][]byte, len(blocks))}
	for i := range blocks {
		l.Blocks[i] = blocks[i].data
		l.Frames += blocks[i].n
		l.Bytes += len(blocks[i].data)
	}
	in.watch.mu.Lock()
	defer in.watch.mu.Unlock()
	for w := range in.watch.set {
		if q := w.queued.Load(); q > 0 && q+int64(l.Bytes) > w.maxBytes {
			w.Missed.Add(1)
			continue
		}
		select {
		case w.c <- l:
			w.queued.Add(int64(l.Bytes))
		default:
			w.Missed.Add(1)
		}
	}
}
