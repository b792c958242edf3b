package httpapi

import (
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/peer/frame"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// WebSocket limits of GET /messages/stream.
const (
	// wsMaxEnvelope is the largest message read; a larger one closes the
	// connection with 1009 (message too big).
	wsMaxEnvelope = 1 << 20
	// wsOutQueue is how many answers and pushes may wait for the writer.
	wsOutQueue = 64
)

type wsFrame struct {
	typ  int
	data []byte
}

// messageStream serves GET /messages/stream. The connection is
// authenticated by its bearer token (scope tasks:write); every envelope on
// it is checked by the same receiver as POST /message (HMAC, paired
// sender, signature, timestamp, contract, the sender's order, message id,
// type and transition). A text message carries one JSON envelope, a
// binary message one msgpack envelope, each optionally after a block of
// the headers X-Synapse-Signature, X-Synapse-Seq and X-Synapse-Seq-Prev
// (peer/frame); each is answered, in order and in
// the same framing, with what POST /message would answer: the response
// envelope, {"accepted":true,"message_id",...}, or the TPError
// {"error":{...}}. A connection whose token has the admin scope is also an
// observer: every envelope the agent accepts (from any transport) is pushed
// to it as received, JSON as text and msgpack as binary. A ping goes every
// 30 s and a pong must come within 10 s; a message over 1 MiB closes the
// connection with 1009; a foreign Origin is refused with 403. On shutdown
// it answers every envelope it has read, then closes with 1001.
func (pa peerAPI) messageStream(ctx *fasthttp.RequestCtx, p auth.Principal, _ []string) error {
	observer := p.Can(auth.ScopeAdmin)
	feed := pa.net.Messages()
	if feed == nil {
		return wire.Errorf(wire.CodeAgentNotReady, "")
	}
	return pa.streams.upgrade(ctx, func(c *websocket.Conn) {
		c.SetReadLimit(wsMaxEnvelope)
		stop := pa.streams.startKeepAlive(c) // on shutdown: 1001, once all is answered
		defer stop()

		out := make(chan wsFrame, wsOutQueue)
		wrote := make(chan struct{})
		go func() {
			defer close(wrote)
			broken := false
			for f := range out { // after a write error, drain so senders never block
				if broken {
					continue
				}
				_ = c.SetWriteDeadline(time.Now().Add(wsWriteWait))
				broken = c.WriteMessage(f.typ, f.data) != nil
			}
		}()
		var pushed chan struct{}
		var sub *peer.FeedSubscription
		if observer {
			sub = feed.Subscribe()
			pushed = make(chan struct{})
			go func() {
				defer close(pushed)
				for m := range sub.C {
					typ := websocket.TextMessage
					if m.Msgpack {
						typ = websocket.BinaryMessage
					}
					out <- wsFrame{typ, m.Raw}
				}
			}()
		}
		for {
			mt, data, err := c.ReadMessage()
			if err != nil {
				break
			}
			out <- pa.wsAnswer(mt, data)
		}
		if sub != nil {
			sub.Close()
			<-pushed
		}
		close(out)
		<-wrote
	})
}

// wsAnswer handles one message read from the stream: a framed envelope
// (peer/frame: the envelope, after an optional block of the headers
// of POST /message) handed to the one receiver, whose answer body goes
// back in the frame type of the message. A panic while handling it is
// answered like POST /message's: internal_error, and the stream goes on.
func (pa peerAPI) wsAnswer(mt int, data []byte) (f wsFrame) {
	defer pa.streams.recoverStream(wire.APIPrefix+"/messages/stream", func() {
		f = wsFrame{websocket.TextMessage, internalErrorJSON}
	})
	typ, ct := websocket.TextMessage, wire.ContentJSON
	if mt == websocket.BinaryMessage {
		typ, ct = websocket.BinaryMessage, wire.ContentMsgpack
	}
	header, body, err := frame.Split(data)
	if err != nil {
		b, _ := wire.CodecFor(ct).Marshal(wire.ErrorBody{Error: wire.AsError(err)})
		return wsFrame{typ, b}
	}
	a, _ := pa.net.Inbound().Deliver(pa.streams.bg, &transport.Inbound{Kind: transport.Envelope, Body: body, ContentType: ct, Header: header})
	if len(a.Body) == 0 {
		return wsFrame{websocket.TextMessage, internalErrorJSON}
	}
	return wsFrame{typ, a.Body}
}
