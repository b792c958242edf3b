package httpapi

import (
	"bytes"
	"runtime/debug"
	"sync"
	"time"
)

// WebSocket messages (tier-1 batches of up to tier1.max_batch_bytes) are
// read into buffers lent for one message, not kept per connection: an
// idle connection holds no message buffer, whatever it sent before.
// Buffers up to msgBufKeep are reused through a pool; larger ones are
// dropped after use, and once such a burst is over (msgBufQuiet without
// another) the memory is handed back to the operating system, at most
// every msgBufEvery.
const (
	msgBufKeep  = 256 << 10
	msgBufQuiet = time.Second
	msgBufEvery = 5 * time.Second
)

type msgBufs struct {
	pool  sync.Pool
	once  sync.Once
	poke  chan struct{}
	done  <-chan struct{}
	freed func() // debug.FreeOSMemory; replaced in tests
}

func newMsgBufs(done <-chan struct{}) *msgBufs {
	return &msgBufs{poke: make(chan struct{}, 1), done: done, freed: debug.FreeOSMemory}
}

func (m *msgBufs) get() *bytes.Buffer {
	if b, ok := m.pool.Get().(*bytes.Buffer); ok {
		return b
	}
	return new(bytes.Buffer)
}

func (m *msgBufs) put(b *bytes.Buffer) {
	if b.Cap() <= msgBufKeep {
		b.Reset()
		m.pool.Put(b)
		return
	}
	m.once.Do(func() { go m.release() })
	select {
	case m.poke <- struct{}{}:
	default:
	}
}

// release returns memory to the system after each burst of large
// messages, until done is closed.
func (m *msgBufs) release() {
	for {
		select {
		case <-m.poke:
		case <-m.done:
			return
		}
		quiet := time.NewTimer(msgBufQuiet)
	wait:
		for {
			select {
			case <-m.poke:
				quiet.Reset(msgBufQuiet)
			case <-quiet.C:
				break wait
			case <-m.done:
				quiet.Stop()
				return
			}
		}
		m.freed()
		select {
		case <-time.After(msgBufEvery):
		case <-m.done:
			return
		}
	}
}
