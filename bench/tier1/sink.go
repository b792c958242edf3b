package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/wire"
)

// sink is the transport ceiling: a fasthttp WebSocket server, configured
// like the agent's (64 KiB buffers), that reads each batch and answers
// {"ok":true,"accepted":N} at once, storing nothing. N comes from the
// batch's frames array header; the frames are not decoded.
type sink struct {
	ln  net.Listener
	srv *fasthttp.Server
	end chan error
}

// errNotBatch: a sink message does not start like a tier-1 batch.
var errNotBatch = errors.New("not a tier-1 batch")

func startSink() (*sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("sink: listen: %w", err)
	}
	up := websocket.FastHTTPUpgrader{ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10}
	s := &sink{ln: ln, end: make(chan error, 1)}
	s.srv = &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			_ = up.Upgrade(ctx, serveSink)
		},
		ReadTimeout: time.Minute,
	}
	go func() { s.end <- s.srv.Serve(ln) }()
	return s, nil
}

func (s *sink) url() string { return "ws://" + s.ln.Addr().String() + "/tier1/stream" }

func (s *sink) close() error {
	err := s.srv.Shutdown()
	<-s.end
	return err
}

// serveSink answers like the agent does (httpapi/tier1_stream.go): the
// reader appends each batch's answer to a buffer and a writer goroutine
// writes what is there, the answers ready together in one write, each its
// own unmasked binary frame.
func serveSink(c *websocket.Conn) {
	defer c.Close()
	var (
		mu      sync.Mutex
		pending []byte
		ended   bool
	)
	wake := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		nc := c.UnderlyingConn()
		var out []byte
		for range wake {
			mu.Lock()
			out, pending = pending, out[:0]
			end := ended
			mu.Unlock()
			if len(out) > 0 {
				if _, err := nc.Write(out); err != nil {
					return
				}
			}
			if end {
				return
			}
		}
	}()
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	var msg []byte
	var small [32]byte
	for {
		_, rd, err := c.NextReader()
		if err == nil {
			msg, err = appendAll(msg[:0], rd)
		}
		if err != nil {
			break
		}
		var b []byte
		if n, err := batchFrameCount(msg); err == nil {
			b = appendOKAck(small[:0], n)
		} else if b, err = wire.Msgpack.Marshal(&wsAck{Error: err.Error()}); err != nil {
			break
		}
		mu.Lock()
		pending = append(pending, 0x80|websocket.BinaryMessage)
		if len(b) < 126 {
			pending = append(pending, byte(len(b)))
		} else {
			pending = binary.BigEndian.AppendUint16(append(pending, 126), uint16(len(b)))
		}
		pending = append(pending, b...)
		mu.Unlock()
		poke()
	}
	mu.Lock()
	ended = true
	mu.Unlock()
	poke()
	<-done
}

// appendOKAck appends {"ok":true,"accepted":n} in msgpack, as the agent
// encodes it (n fits in 32 bits).
func appendOKAck(dst []byte, n int) []byte {
	dst = append(dst, 0x82, 0xa2, 'o', 'k', 0xc3, 0xa8, 'a', 'c', 'c', 'e', 'p', 't', 'e', 'd')
	switch {
	case n < 128:
		return append(dst, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(dst, 0xcd), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(dst, 0xce), uint32(n))
}

// appendAll appends what r has to dst.
func appendAll(dst []byte, r io.Reader) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// batchFrameCount reads the length of the frames array of a batch
// [capability_id, version, [frame, ...], batch_id?] without decoding it.
func batchFrameCount(b []byte) (int, error) {
	n, b, err := arrayLen(b)
	if err != nil || n < 3 {
		return 0, errNotBatch
	}
	for range 2 {
		if b, err = skipStr(b); err != nil {
			return 0, err
		}
	}
	n, _, err = arrayLen(b)
	return n, err
}

func arrayLen(b []byte) (int, []byte, error) {
	switch {
	case len(b) >= 1 && b[0]&0xf0 == 0x90:
		return int(b[0] & 0x0f), b[1:], nil
	case len(b) >= 3 && b[0] == 0xdc:
		return int(binary.BigEndian.Uint16(b[1:])), b[3:], nil
	case len(b) >= 5 && b[0] == 0xdd:
		return int(binary.BigEndian.Uint32(b[1:])), b[5:], nil
	}
	return 0, nil, errNotBatch
}

func skipStr(b []byte) ([]byte, error) {
	var n, h int
	switch {
	case len(b) >= 1 && b[0]&0xe0 == 0xa0:
		n, h = int(b[0]&0x1f), 1
	case len(b) >= 2 && b[0] == 0xd9:
		n, h = int(b[1]), 2
	case len(b) >= 3 && b[0] == 0xda:
		n, h = int(binary.BigEndian.Uint16(b[1:])), 3
	default:
		return nil, errNotBatch
	}
	if len(b) < h+n {
		return nil, errNotBatch
	}
	return b[h+n:], nil
}
