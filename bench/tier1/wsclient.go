package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/synapse-edge/synapse/wire"
)

// The client of the agent's WebSocket stream (and of the sink), written
// the way an efficient device library would send telemetry, and held to
// the same rules as the NATS side (nats.go's PublishAsync with
// PublishAsyncMaxPending): the messages are encoded before the clock
// starts (here the msgpack batches; nats.go gets the same payloads), at
// most window of them wait for their acknowledgement, the writer buffers
// and writes when its buffer is full or it has nothing more to send right
// now (all sent, or the window full), and the acknowledgements are read
// on a goroutine of their own. The library (fasthttp/websocket) does the
// handshake; after it the client frames the messages itself: one masked
// binary frame per message, a fresh mask key per frame (RFC 6455 §5.3),
// written into one reused buffer, and the answers are parsed in place
// from the read buffer, without reflection and without allocating per
// message.

// wsAck is the answer to one batch: {"ok":true,"accepted":N,"batch_id":...}
// or {"ok":false,"error":{...}}.
type wsAck struct {
	OK       bool   `msgpack:"ok"`
	Accepted int    `msgpack:"accepted"`
	BatchID  string `msgpack:"batch_id"`
	Error    any    `msgpack:"error"`
}

// errAckRefused: the server answered a batch with ok false.
var errAckRefused = errors.New("batch refused")

// wsBufSize is the client's read and write buffer, the agent's size.
const wsBufSize = 64 << 10

// wsIngest sends msgs over one WebSocket connection to url, one binary
// message each, keeping at most window of them unacknowledged, while a
// reader counts the acknowledgements. It returns the time from the first
// send to the last ack and the frames the acks accepted.
func wsIngest(ctx context.Context, url, token string, msgs [][]byte, window int) (time.Duration, int, error) {
	hdr := http.Header{}
	if token != "" {
		hdr.Set("Authorization", "Bearer "+token)
	}
	d := websocket.Dialer{ReadBufferSize: wsBufSize, WriteBufferSize: wsBufSize, HandshakeTimeout: 10 * time.Second}
	c, resp, err := d.DialContext(ctx, url, hdr)
	if err != nil {
		if resp != nil {
			return 0, 0, fmt.Errorf("dial %s: %w (HTTP %d)", url, err, resp.StatusCode)
		}
		return 0, 0, fmt.Errorf("dial %s: %w", url, err)
	}
	// The server says nothing before the first batch, so nothing is left
	// in the library's read buffer: the connection is ours from here.
	nc := c.UnderlyingConn()
	defer nc.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	s := &wsSender{nc: nc, window: int64(max(window, 1)), wake: make(chan struct{}, 1),
		buf: make([]byte, 0, wsBufSize), rng: rand.NewChaCha8(seed())}

	type outcome struct {
		end      time.Time
		accepted int
		err      error
	}
	read := make(chan outcome, 1)
	go func() {
		accepted, err := s.readAcks(len(msgs))
		if err != nil {
			_ = nc.Close() // unblocks the writer
		}
		s.acked.Store(int64(len(msgs)) + s.window) // a waiting writer goes on (and fails)
		s.poke()
		read <- outcome{end: time.Now(), accepted: accepted, err: err}
	}()

	start := time.Now()
	werr := s.sendAll(msgs)
	if werr != nil {
		_ = nc.Close() // unblocks the reader
		if out := <-read; out.err != nil {
			return 0, 0, out.err // the cause, when the reader saw it first
		}
		return 0, 0, werr
	}
	out := <-read
	if out.err != nil {
		return 0, 0, out.err
	}
	s.mu.Lock()
	_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = nc.Write(s.frame(nil, websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")))
	s.mu.Unlock()
	return out.end.Sub(start), out.accepted, nil
}

// seed is a ChaCha8 seed from the runtime's random source.
func seed() (s [32]byte) {
	for i := 0; i < len(s); i += 8 {
		binary.LittleEndian.PutUint64(s[i:], rand.Uint64())
	}
	return s
}

// wsSender is the writing side of one connection.
type wsSender struct {
	nc     net.Conn
	window int64
	acked  atomic.Int64  // answers read
	wait   atomic.Bool   // the writer sleeps on wake
	wake   chan struct{} // poked by the reader when the writer waits
	mu     sync.Mutex    // one Write at a time: the writer's, the reader's pongs
	buf    []byte
	rng    *rand.ChaCha8
}

// sendAll frames and writes msgs: into the buffer while the window has
// room, a Write whenever the buffer is full or the window is.
func (s *wsSender) sendAll(msgs [][]byte) error {
	for i, m := range msgs {
		if int64(i)-s.acked.Load() >= s.window {
			if err := s.flush(); err != nil {
				return err
			}
			for int64(i)-s.acked.Load() >= s.window {
				s.wait.Store(true)
				if int64(i)-s.acked.Load() < s.window {
					s.wait.Store(false)
					break
				}
				<-s.wake
			}
		}
		if len(s.buf)+len(m)+14 > cap(s.buf) && len(s.buf) > 0 {
			if err := s.flush(); err != nil {
				return err
			}
		}
		s.buf = s.frame(s.buf, websocket.BinaryMessage, m)
	}
	return s.flush()
}

// poke wakes the writer if it waits for room in the window.
func (s *wsSender) poke() {
	if s.wait.CompareAndSwap(true, false) {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

func (s *wsSender) flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	s.mu.Lock()
	_, err := s.nc.Write(s.buf)
	s.mu.Unlock()
	s.buf = s.buf[:0]
	if err != nil {
		return fmt.Errorf("send batches: %w", err)
	}
	return nil
}

// frame appends payload as one final, masked client frame of type op.
func (s *wsSender) frame(dst []byte, op int, payload []byte) []byte {
	dst = append(dst, 0x80|byte(op))
	switch n := len(payload); {
	case n < 126:
		dst = append(dst, 0x80|byte(n))
	case n <= 0xffff:
		dst = append(dst, 0x80|126, byte(n>>8), byte(n))
	default:
		dst = binary.BigEndian.AppendUint64(append(dst, 0x80|127), uint64(n))
	}
	var key [4]byte
	binary.LittleEndian.PutUint32(key[:], uint32(s.rng.Uint64()))
	dst = append(dst, key[:]...)
	off := len(dst)
	dst = append(dst, payload...)
	for i, b := range dst[off:] {
		dst[off+i] = b ^ key[i&3]
	}
	return dst
}

// readAcks reads n answers and adds up the frames they accepted; it
// stops at the first refusal. It answers pings and fails on a close.
func (s *wsSender) readAcks(n int) (int, error) {
	br := bufio.NewReaderSize(s.nc, wsBufSize)
	accepted := 0
	var big []byte // a payload larger than the read buffer
	for i := 0; i < n; {
		h, err := br.Peek(2)
		if err != nil {
			return accepted, fmt.Errorf("read ack %d of %d: %w", i+1, n, err)
		}
		op, hl, size := int(h[0]&0x0f), 2, int64(h[1]&0x7f)
		if h[0]&0x80 == 0 || h[1]&0x80 != 0 {
			return accepted, fmt.Errorf("read ack %d: a fragmented or masked server frame", i+1)
		}
		switch size {
		case 126:
			hl = 4
		case 127:
			hl = 10
		}
		if h, err = br.Peek(hl); err != nil {
			return accepted, fmt.Errorf("read ack %d of %d: %w", i+1, n, err)
		}
		switch hl {
		case 4:
			size = int64(binary.BigEndian.Uint16(h[2:]))
		case 10:
			size = int64(binary.BigEndian.Uint64(h[2:]))
		}
		var p []byte
		if int64(hl)+size <= int64(br.Size()) {
			if p, err = br.Peek(hl + int(size)); err == nil {
				p = p[hl:]
			}
		} else if size <= 16<<20 {
			_, _ = br.Discard(hl)
			hl = 0
			big = append(big[:0], make([]byte, size)...)
			_, err = io.ReadFull(br, big)
			p = big
		} else {
			err = fmt.Errorf("server frame of %d bytes", size)
		}
		if err != nil {
			return accepted, fmt.Errorf("read ack %d of %d: %w", i+1, n, err)
		}
		switch op {
		case websocket.BinaryMessage, websocket.TextMessage:
			a, err := parseAck(p)
			if err != nil {
				return accepted, fmt.Errorf("ack %d: %w", i+1, err)
			}
			accepted += a
			i++
			s.acked.Add(1)
			s.poke()
		case websocket.PingMessage:
			s.mu.Lock()
			_, err = s.nc.Write(s.frame(nil, websocket.PongMessage, p))
			s.mu.Unlock()
			if err != nil {
				return accepted, fmt.Errorf("pong: %w", err)
			}
		case websocket.CloseMessage:
			return accepted, fmt.Errorf("read ack %d of %d: the server closed the connection: %q", i+1, n, p)
		}
		if hl > 0 {
			_, _ = br.Discard(hl + int(size))
		}
	}
	return accepted, nil
}

// parseAck returns the frames an answer accepted. The usual answer, a map
// of ok true, accepted, batch_id and maybe duplicate, is read in place;
// anything else goes through the msgpack decoder (a refusal: errAckRefused
// with the server's error).
func parseAck(p []byte) (int, error) {
	if n, ok := parseOKAck(p); ok {
		return n, nil
	}
	var ack wsAck
	if err := wire.Msgpack.Unmarshal(p, &ack); err != nil {
		return 0, fmt.Errorf("decode: %w", err)
	}
	if !ack.OK {
		return 0, fmt.Errorf("batch %q: %w: %v", ack.BatchID, errAckRefused, ack.Error)
	}
	return ack.Accepted, nil
}

// parseOKAck reads an answer {"ok":true,"accepted":N,...} made of fixstr
// keys, bools, non-negative ints and short strings; ok is false for any
// other shape.
func parseOKAck(p []byte) (accepted int, ok bool) {
	if len(p) == 0 || p[0]&0xf0 != 0x80 {
		return 0, false
	}
	fields, p := int(p[0]&0x0f), p[1:]
	okTrue, haveN := false, false
	for range fields {
		if len(p) == 0 || p[0]&0xe0 != 0xa0 || len(p) < 1+int(p[0]&0x1f) {
			return 0, false
		}
		key := p[1 : 1+int(p[0]&0x1f)]
		p = p[1+len(key):]
		if len(p) == 0 {
			return 0, false
		}
		switch string(key) {
		case "ok":
			okTrue = p[0] == 0xc3
			p = p[1:]
		case "accepted":
			var v uint64
			switch {
			case p[0] < 0x80:
				v, p = uint64(p[0]), p[1:]
			case p[0] == 0xcc && len(p) >= 2:
				v, p = uint64(p[1]), p[2:]
			case p[0] == 0xcd && len(p) >= 3:
				v, p = uint64(binary.BigEndian.Uint16(p[1:])), p[3:]
			case p[0] == 0xce && len(p) >= 5:
				v, p = uint64(binary.BigEndian.Uint32(p[1:])), p[5:]
			default:
				return 0, false
			}
			accepted, haveN = int(v), true
		case "batch_id":
			switch {
			case p[0]&0xe0 == 0xa0 && len(p) >= 1+int(p[0]&0x1f):
				p = p[1+int(p[0]&0x1f):]
			case p[0] == 0xd9 && len(p) >= 2 && len(p) >= 2+int(p[1]):
				p = p[2+int(p[1]):]
			default:
				return 0, false
			}
		case "duplicate":
			if p[0] != 0xc2 && p[0] != 0xc3 {
				return 0, false
			}
			p = p[1:]
		default:
			return 0, false
		}
	}
	return accepted, okTrue && haveN && len(p) == 0
}
