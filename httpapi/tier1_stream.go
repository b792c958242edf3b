package httpapi

import (
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
	max := int64(s.t1.Config().MaxBatchBytes)
	return s.streams.upgrade(ctx, func(c *websocket.Conn) {
		c.SetReadLimit(max)
		stop := s.streams.startKeepAlive(c)
		defer stop()

		in := s.t1.Ingestor()
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
	var buf, small []byte
	var ack wire.Tier1Ack // one for the connection: an error answer makes it escape
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
				ack = wire.Tier1Ack{BatchID: r.BatchID, Error: wire.AsError(a.Err)}
			} else {
				ack = wire.Tier1Ack{OK: true, Accepted: r.Accepted, BatchID: r.BatchID, Duplicate: r.Duplicate}
			}
			small = ack.AppendMsgpack(small[:0])
			buf = wire.AppendWSBinary(buf, small)
		}
		_ = nc.SetWriteDeadline(time.Now().Add(wsWriteWait))
		_, err := nc.Write(buf)
		broken = err != nil
	})
}
