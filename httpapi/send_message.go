package httpapi

import (
	"bytes"
	"encoding/json"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/wire"
)

// message serves POST /message: a peer's signed envelope goes to the one
// receiver (receiveMessage); a client's SendMessageRequest of seed 003
// §4.2, which is not an envelope, is sent (sendMessage).
func (pa peerAPI) message(ctx *fasthttp.RequestCtx, p auth.Principal, args []string) error {
	if isSendMessage(ctx) {
		return pa.sendMessage(ctx)
	}
	return pa.receiveMessage(ctx, p, args)
}

// isSendMessage reports whether a POST /message body is a
// SendMessageRequest: a JSON object with receiver_id and none of the keys
// of an envelope (which names its receiver in receiver.agent_id). Bodies
// that hold "tp_version" anywhere, every envelope, are decided by that
// scan alone; the others, where "receiver_id" appears, by their top-level
// keys, so that an envelope stripped of its tp_version whose payload
// names receiver_id is refused as an envelope, as every door refuses it.
func isSendMessage(ctx *fasthttp.RequestCtx) bool {
	if c, err := requestCodec(ctx); err != nil || c != wire.JSON {
		return false
	}
	b := ctx.PostBody()
	if bytes.Contains(b, []byte(`"tp_version"`)) || !bytes.Contains(b, []byte(`"receiver_id"`)) {
		return false
	}
	var top struct {
		ReceiverID  json.RawMessage `json:"receiver_id"`
		MessageID   json.RawMessage `json:"message_id"`
		MessageType json.RawMessage `json:"message_type"`
		Sender      json.RawMessage `json:"sender"`
		Receiver    json.RawMessage `json:"receiver"`
		Signature   json.RawMessage `json:"signature"`
	}
	if json.Unmarshal(b, &top) != nil {
		return false
	}
	return top.ReceiverID != nil && top.MessageID == nil && top.MessageType == nil && top.Sender == nil &&
		top.Receiver == nil && top.Signature == nil
}

// sendMessage is SendMessage: {receiver_id, content_type, payload_json,
// correlation_id?, conversation_id?} asks this agent to send the paired
// peer receiver_id a synapse:message envelope, signed as its own and
// delivered through its outbox (in order, with retries). It needs a token
// with tasks:write and honours Idempotency-Key; the answer is 202
// {message_id, status: "queued"}, message_id the envelope's.
func (pa peerAPI) sendMessage(ctx *fasthttp.RequestCtx) error {
	p, err := pa.authorize(ctx, auth.ScopeTasksWrite)
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
	return idempotent(ctx, pa.a, p, "", func() (int, any, error) {
		id, err := pa.net.Send(ctx, agent.Outgoing{Peer: req.ReceiverID, Type: wire.MsgSynapseMessage, CorrelationID: req.CorrelationID, Payload: pl})
		if err != nil {
			return 0, nil, err
		}
		return fasthttp.StatusAccepted, &wire.SendMessageResponse{MessageID: id, Status: wire.MessageQueued}, nil
	})
}
