package tier1

import (
	"sync"
	"sync/atomic"
)

// Live is one stored batch as a Watcher sees it: the routine and the
// batch's frames as the blocks that were stored (see block.go; read them
// with NewBlockReader). The blocks are not modified after they are sent.
type Live struct {
	Desc   *Descriptor
	Blocks [][]byte
	Frames int
}

// Watcher receives the batches stored after Watch, for a live view of the
// ingest. A watcher that does not keep up misses batches rather than
// slowing the ingest: the store's writer never waits for it.
type Watcher struct {
	// C carries the batches; it is closed by Close.
	C      <-chan Live
	c      chan Live
	in     *Ingestor
	closed bool // under in.watch.mu
	// Missed counts the batches dropped because C was full.
	Missed atomic.Uint64
}

// watchers are an Ingestor's live watchers; n spares the ingest a lock
// when there are none.
type watchers struct {
	n   atomic.Int32
	mu  sync.Mutex
	set map[*Watcher]struct{}
}

// Watch starts a watcher whose channel holds up to buffer batches.
func (in *Ingestor) Watch(buffer int) *Watcher {
	c := make(chan Live, max(buffer, 1))
	w := &Watcher{C: c, c: c, in: in}
	in.watch.mu.Lock()
	if in.watch.set == nil {
		in.watch.set = map[*Watcher]struct{}{}
	}
	in.watch.set[w] = struct{}{}
	in.watch.n.Store(int32(len(in.watch.set)))
	in.watch.mu.Unlock()
	return w
}

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
	}
	in.watch.mu.Lock()
	defer in.watch.mu.Unlock()
	for w := range in.watch.set {
		select {
		case w.c <- l:
		default:
			w.Missed.Add(1)
		}
	}
}
