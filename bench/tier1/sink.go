package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
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

func serveSink(c *websocket.Conn) {
	defer c.Close()
	for {
		_, data, err := c.ReadMessage()
		if err != nil {
			return
		}
		ack := wsAck{OK: true}
		if ack.Accepted, err = batchFrameCount(data); err != nil {
			ack = wsAck{Error: err.Error()}
		}
		b, err := wire.Msgpack.Marshal(&ack)
		if err != nil {
			return
		}
		if err := c.WriteMessage(websocket.BinaryMessage, b); err != nil {
			return
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
