package httpapi

import (
	"encoding/binary"
	"net"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

// tier1Window is how many batches of one stream may wait for their
// answers by default (Options.Tier1ReadAhead); beyond that the server
// stops reading the connection.
const tier1Window = 4096

// tier1Stream serves GET /tier1/stream: each binary message is one batch;
// each is answered, in order, by a msgpack map {"ok":true,"accepted":N,
// "batch_id":...} once durable, or {"ok":false,"error":{...}}. Up to
// Options.Tier1ReadAhead batches may wait for their answers; beyond that
// the server stops reading.
//
// The handler reads and decodes the batches (tier1.Ingestor.Prepare); a
// pump goroutine hands them to the store and writes the answers
// (tier1.Stream): the batches that arrive while one store write of the
// stream is on its way to the disk go together in the next.
//
// The answers are written to the connection itself, not through the
// websocket.Conn (which makes one write per message): those ready together
// go out in one write, each still its own WebSocket message. A server
// frame is unmasked and uncompressed (compression is not offered), and a
// single Write of whole frames does not interleave with the library's
// control frames (ping, close), which are single Writes too.
func (s *Server) tier1Stream(ctx *fasthttp.RequestCtx, p auth.Principal, _ []string) error {
	scope := tier1Scope(ctx, p)
	max := int64(s.a.Config().Tier1.MaxBatchBytes)
	return s.streams.upgrade(ctx, func(c *websocket.Conn) {
		c.SetReadLimit(max)
		stop := s.streams.startKeepAlive(c)
		defer stop()

		in := s.a.Tier1()
		st := in.NewStream(s.tier1Window)
		pumped := make(chan struct{})
		go func() {
			defer close(pumped)
			writeAnswers(c.UnderlyingConn(), st)
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
			var p *tier1.Pending
			if mt != websocket.BinaryMessage {
				err = wire.Errorf(wire.CodeMessageFormatInvalid, "send each batch as one binary message")
			} else {
				p, err = in.Prepare(s.bg, scope, "", buf.Bytes())
			}
			s.msgBufs.put(buf)
			st.Add(p, err)
		}
		st.End()
		<-pumped // every batch read is answered (or the connection broke)
	})
}

// writeAnswers runs the pump of st, writing the answers to nc; once a
// write failed it drops them.
func writeAnswers(nc net.Conn, st *tier1.Stream) {
	var buf []byte
	var ack tier1Ack // one for the connection: an error answer makes it escape
	broken := false
	st.Pump(func(as []tier1.Answer) {
		if broken {
			return
		}
		buf = buf[:0]
		for i := range as {
			a := &as[i]
			r := &a.Result
			if a.Err != nil {
				ack = tier1Ack{BatchID: r.BatchID, Error: wire.AsError(a.Err)}
			} else {
				ack = tier1Ack{OK: true, Accepted: r.Accepted, BatchID: r.BatchID, Duplicate: r.Duplicate}
			}
			buf = appendAckFrame(buf, &ack)
		}
		_ = nc.SetWriteDeadline(time.Now().Add(wsWriteWait))
		_, err := nc.Write(buf)
		broken = err != nil
	})
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
