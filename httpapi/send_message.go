package httpapi

import (
	"bytes"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/wire"
)

// message serves POST /message: a peer's signed envelope goes to the one
// receiver (receiveMessage); a client's SendMessageRequest of seed 003
// §4.2, which is not an envelope, is sent (sendMessage).
func (s *Server) message(ctx *fasthttp.RequestCtx, p auth.Principal, args []string) error {
	if isSendMessage(ctx) {
		return s.sendMessage(ctx)
	}
	return s.receiveMessage(ctx, p, args)
}

// isSendMessage reports whether a POST /message body is a
// SendMessageRequest: JSON that names receiver_id and not tp_version,
// which every envelope carries (an envelope names its receiver in
// receiver.agent_id).
func isSendMessage(ctx *fasthttp.RequestCtx) bool {
	if c, err := requestCodec(ctx); err != nil || c != wire.JSON {
		return false
	}
	b := ctx.PostBody()
	return !bytes.Contains(b, []byte(`"tp_version"`)) && bytes.Contains(b, []byte(`"receiver_id"`))
}

// sendMessage is SendMessage: {receiver_id, content_type, payload_json,
// correlation_id?, conversation_id?} asks this agent to send the paired
// peer receiver_id a synapse:message envelope, signed as its own and
// delivered through its outbox (in order, with retries). It needs a token
// with tasks:write and honours Idempotency-Key; the answer is 202
// {message_id, status: "queued"}, message_id the envelope's.
func (s *Server) sendMessage(ctx *fasthttp.RequestCtx) error {
	p, err := s.authorize(ctx, auth.ScopeTasksWrite)
	if err != nil {
		return err
	}
	var req wire.SendMessageRequest
	if err := decode(ctx, &req); err != nil {
		return err
	}
	pl, err := req.Message()
	if err != nil {
		return err
	}
	return s.idempotent(ctx, p, func() (int, any, error) {
		id, err := s.net.Send(ctx, agent.Outgoing{Peer: req.ReceiverID, Type: wire.MsgSynapseMessage, CorrelationID: req.CorrelationID, Payload: pl})
		if err != nil {
			return 0, nil, err
		}
		return fasthttp.StatusAccepted, &wire.SendMessageResponse{MessageID: id, Status: wire.MessageQueued}, nil
	})
}
