package httpapi

import (
	"encoding/binary"
	"net"
	"sync"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

// tier1Window is how many batches of one stream may wait for their
// answers; beyond that the server stops reading the connection.
const tier1Window = 4096

// tier1Stream serves GET /tier1/stream: each binary message is one batch;
// each is answered, in order, by a msgpack map {"ok":true,"accepted":N,
// "batch_id":...} once durable, or {"ok":false,"error":{...}}. Up to
// tier1Window batches may wait for their answers; beyond that the server
// stops reading.
//
// The handler reads and decodes the batches (tier1.Ingestor.Prepare); a
// pump goroutine hands them to the store (tier1.Ingestor.Store) and
// writes the answers. While one store write of the stream is on its way to
// the disk, the batches that arrive meanwhile wait and then go together in
// the next: a sender that pipelines small batches gets one write (one
// transaction, one block per device) per group of them, not per batch.
func (s *Server) tier1Stream(ctx *fasthttp.RequestCtx, p auth.Principal, _ []string) error {
	scope := tier1Scope(ctx, p)
	max := int64(s.a.Config().Tier1.MaxBatchBytes)
	return s.upgrade(ctx, func(c *websocket.Conn) {
		c.SetReadLimit(max)
		stop := s.startKeepAlive(c)
		defer stop()

		in := s.a.Tier1()
		st := newT1Stream(in, c.UnderlyingConn())
		pumped := make(chan struct{})
		go func() {
			defer close(pumped)
			st.pump()
		}()
		for {
			mt, rd, err := c.NextReader()
			if err != nil {
				break
			}
			// A buffer lent for this message (msgbuf.go): Prepare keeps
			// nothing of the bytes it is given once it returns.
			buf := s.msgBufs.get()
			if _, err := buf.ReadFrom(rd); err != nil {
				s.msgBufs.put(buf)
				break
			}
			var it t1Item
			if mt != websocket.BinaryMessage {
				it.err = wire.Errorf(wire.CodeMessageFormatInvalid, "send each batch as one binary message")
			} else if it.p, err = in.Prepare(s.bg, scope, "", buf.Bytes()); err != nil {
				it.err = wire.AsError(err)
			}
			s.msgBufs.put(buf)
			st.add(it)
		}
		st.end()
		<-pumped // every batch read is answered (or the connection broke)
	})
}

// t1Item is one batch of a stream waiting for its answer.
type t1Item struct {
	p   *tier1.Pending // nil when refused on arrival
	err *wire.Error    // the refusal
	seq uint64         // arrival number
}

// t1Stream is what the reader of a tier-1 stream, its pump and the store's
// writer share.
type t1Stream struct {
	in *tier1.Ingestor
	nc net.Conn

	mu sync.Mutex
	// items are the unanswered batches in arrival order, n of them from
	// head: a ring that grows up to tier1Window as batches wait.
	items   []t1Item
	head, n int
	seq     uint64 // of the last batch read
	// unsent are the prepared batches not handed to the store yet, the
	// last of them number unsentLast; flying those of the store write
	// under way (up to flyingLast). Writes finish in order, so every
	// batch up to storedThrough is answerable.
	unsent, flying         []*tier1.Pending
	unsentLast, flyingLast uint64
	storedThrough          uint64
	inflight               bool
	eof                    bool // the reader is done
	// The pump sleeps on wake, the reader on room (when the window is
	// full); whoever changes what they wait for pokes them.
	pumpIdle, readerWaits bool
	wake, room            chan struct{}
	// stored is the callback of the store write, made once.
	stored func()
}

func newT1Stream(in *tier1.Ingestor, nc net.Conn) *t1Stream {
	st := &t1Stream{in: in, nc: nc, items: make([]t1Item, 16), wake: make(chan struct{}, 1), room: make(chan struct{}, 1)}
	st.stored = st.onStored
	return st
}

// poke wakes a sleeping pump; st.mu is held.
func (st *t1Stream) poke() {
	if st.pumpIdle {
		st.pumpIdle = false
		st.wake <- struct{}{}
	}
}

// add queues one batch read, waiting while the window is full.
func (st *t1Stream) add(it t1Item) {
	st.mu.Lock()
	for st.n == len(st.items) {
		if len(st.items) < tier1Window {
			grown := make([]t1Item, min(2*len(st.items), tier1Window))
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
	it.seq = st.seq
	st.items[(st.head+st.n)%len(st.items)] = it
	st.n++
	if it.p != nil {
		st.unsent = append(st.unsent, it.p)
		st.unsentLast = it.seq
	}
	st.poke()
	st.mu.Unlock()
}

// end tells the pump that nothing more will be read.
func (st *t1Stream) end() {
	st.mu.Lock()
	st.eof = true
	st.poke()
	st.mu.Unlock()
}

// onStored makes the batches of the store write under way answerable; it
// runs on the store's writer goroutine.
func (st *t1Stream) onStored() {
	st.mu.Lock()
	st.storedThrough = st.flyingLast
	st.inflight = false
	st.poke()
	st.mu.Unlock()
}

// answerable reports whether the oldest unanswered batch can be answered;
// st.mu is held.
func (st *t1Stream) answerable() bool {
	if st.n == 0 {
		return false
	}
	it := &st.items[st.head]
	return it.p == nil || it.seq <= st.storedThrough
}

// pump hands the prepared batches to the store, one write at a time, and
// answers the batches in order as their writes finish. Answers that are
// ready together go out in one write to the connection, each still its
// own WebSocket message. It returns once the reader ended and every batch
// is answered, reading (and dropping) the answers once a write failed.
//
// The frames are written to the connection itself, not through the
// websocket.Conn (which makes one write per message): a server frame is
// unmasked and uncompressed (compression is not offered), and a single
// Write of whole frames does not interleave with the library's control
// frames (ping, close), which are single Writes too.
func (st *t1Stream) pump() {
	var buf []byte
	var ack tier1Ack // one for the connection: an error answer makes it escape
	broken := false
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
			buf = buf[:0]
			for st.answerable() && len(buf) < wsBufferSize {
				ack = st.items[st.head].ack()
				buf = appendAckFrame(buf, &ack)
				st.items[st.head] = t1Item{}
				st.head = (st.head + 1) % len(st.items)
				st.n--
			}
			if st.readerWaits {
				st.readerWaits = false
				st.room <- struct{}{}
			}
			st.mu.Unlock()
			if !broken {
				_ = st.nc.SetWriteDeadline(time.Now().Add(wsWriteWait))
				_, err := st.nc.Write(buf)
				broken = err != nil
			}
			st.mu.Lock()
		case st.eof && st.n == 0:
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

// ack is the answer to an answerable item.
func (it *t1Item) ack() tier1Ack {
	switch {
	case it.p == nil:
		return tier1Ack{Error: it.err}
	case it.p.Err != nil:
		return tier1Ack{BatchID: it.p.Result.BatchID, Error: wire.AsError(it.p.Err)}
	}
	r := &it.p.Result
	return tier1Ack{OK: true, Accepted: r.Accepted, BatchID: r.BatchID, Duplicate: r.Duplicate}
}

// appendAckFrame appends ack as one final, unmasked binary WebSocket frame
// (RFC 6455 §5.2) holding its msgpack map.
func appendAckFrame(dst []byte, ack *tier1Ack) []byte {
	var b []byte
	var small [96]byte
	if ack.Error == nil {
		b = appendAckMsgpack(small[:0], ack)
	} else {
		var err error
		if b, err = wire.Msgpack.Marshal(ack); err != nil { // a tier1Ack always encodes; answer something valid anyway
			b, _ = wire.Msgpack.Marshal(&tier1Ack{Error: wire.Errorf(wire.CodeInternal, "encode answer: %v", err)})
		}
	}
	dst = append(dst, 0x80|websocket.BinaryMessage)
	switch n := len(b); {
	case n < 126:
		dst = append(dst, byte(n))
	case n <= 0xffff:
		dst = append(dst, 126, byte(n>>8), byte(n))
	default:
		dst = append(dst, 127)
		dst = binary.BigEndian.AppendUint64(dst, uint64(n))
	}
	return append(dst, b...)
}

// appendAckMsgpack appends an answer without an error as wire.Msgpack
// encodes a tier1Ack (the same bytes; no reflection, no allocation):
// a map of ok, accepted, then batch_id and duplicate when set, ints in
// their smallest format.
func appendAckMsgpack(dst []byte, ack *tier1Ack) []byte {
	n := byte(2)
	if ack.BatchID != "" {
		n++
	}
	if ack.Duplicate {
		n++
	}
	dst = append(dst, 0x80|n, 0xa2, 'o', 'k', 0xc2)
	if ack.OK {
		dst[len(dst)-1] = 0xc3
	}
	dst = append(dst, 0xa8, 'a', 'c', 'c', 'e', 'p', 't', 'e', 'd')
	dst = appendMsgpackInt(dst, int64(ack.Accepted))
	if ack.BatchID != "" {
		dst = append(dst, 0xa8, 'b', 'a', 't', 'c', 'h', '_', 'i', 'd')
		dst = appendMsgpackStr(dst, ack.BatchID)
	}
	if ack.Duplicate {
		dst = append(dst, 0xa9, 'd', 'u', 'p', 'l', 'i', 'c', 'a', 't', 'e', 0xc3)
	}
	return dst
}

// appendMsgpackInt appends i in its smallest msgpack format.
func appendMsgpackInt(dst []byte, i int64) []byte {
	switch {
	case i >= 0 && i < 128:
		return append(dst, byte(i))
	case i >= 0 && i <= 0xff:
		return append(dst, 0xcc, byte(i))
	case i >= 0 && i <= 0xffff:
		return append(dst, 0xcd, byte(i>>8), byte(i))
	case i >= 0 && i <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(dst, 0xce), uint32(i))
	case i >= 0:
		return binary.BigEndian.AppendUint64(append(dst, 0xcf), uint64(i))
	case i >= -32:
		return append(dst, byte(i))
	case i >= -128:
		return append(dst, 0xd0, byte(i))
	case i >= -32768:
		return append(dst, 0xd1, byte(i>>8), byte(i))
	case i >= -2147483648:
		return binary.BigEndian.AppendUint32(append(dst, 0xd2), uint32(i))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xd3), uint64(i))
}

// appendMsgpackStr appends s with the smallest str header.
func appendMsgpackStr(dst []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		dst = append(dst, 0xa0|byte(n))
	case n <= 0xff:
		dst = append(dst, 0xd9, byte(n))
	case n <= 0xffff:
		dst = append(dst, 0xda, byte(n>>8), byte(n))
	default:
		dst = binary.BigEndian.AppendUint32(append(dst, 0xdb), uint32(n))
	}
	return append(dst, s...)
}
