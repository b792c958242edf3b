package peer

import (
	"context"
	"errors"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// The one receiver. Every binding that takes envelopes from peers (POST
// /message and /callback, POST /message/batch, the WebSocket stream, the
// gRPC SendMessage and StreamMessages, MQTT) only maps its framing onto
// a transport.Inbound — the envelope's bytes, its codec, and the headers
// X-Synapse-Signature, X-Synapse-Seq and X-Synapse-Seq-Prev — and hands it
// to Deliver, which does everything else, in this order:
//
//   - the envelope is decoded (400 message_format_invalid);
//   - the transport HMAC of a peer that shares a secret (p2p_hmac.go);
//   - receiver, paired sender, Ed25519 signature, clock skew, contract
//     (receiveEnvelope, p2p_inbound.go);
//   - the sender's order (p2p_order.go) when the sequence headers are set;
//   - the message id (a duplicate), the message type and the task's state
//     (dispatch), and the answer.
//
// So the same envelope gets the same answer through every door. Any error
// that is not one of the registry's refusals (a store write that failed,
// say) is answered as a retriable refusal: 500 TP-SYS002 for a store
// error, else 500 internal_error, both with "retriable":true and a retry
// hint, so the sender's outbox sends the envelope again.

// Receiver is the network's entry point for wires that receive envelopes
// themselves (MQTT: an envelope published to this agent's inbox).
func (ib *Inbound) Receiver() transport.Receiver {
	return transport.ReceiverFunc(func(ctx context.Context, in *transport.Inbound) transport.Answer {
		a, _ := ib.Deliver(ctx, in)
		return a
	})
}

// HeaderAccept, in an Inbound's Header, names the codec of the answer
// ("application/msgpack" or JSON) when it differs from the envelope's.
const HeaderAccept = "Accept"

// hmacCheckedKey marks a context whose sender's transport HMAC was
// verified over a body that held this envelope (a batch's): the envelope
// itself is not checked again.
type hmacCheckedKey struct{}

// Deliver checks and applies one inbound envelope and returns the answer
// to send back, after the envelope's effects are on disk, and the Reply
// when it was accepted (nil when refused; the answer's Error then says
// why).
func (ib *Inbound) Deliver(ctx context.Context, in *transport.Inbound) (transport.Answer, *Reply) {
	codec := wire.CodecFor(in.ContentType)
	msgpack := codec == wire.Msgpack
	answerCodec := codec
	if a := in.Header[HeaderAccept]; a != "" {
		answerCodec = wire.CodecFor(a)
	}
	header := map[string]string{HeaderOrdering: OrderingPerSender}
	if len(in.Body) == 0 {
		return errorAnswer(wire.Errorf(wire.CodeMessageFormatInvalid, "the message is empty: send one envelope"), answerCodec, header), nil
	}
	m, err := wire.DecodeEnvelope(in.Body, msgpack)
	if err != nil {
		return errorAnswer(err, answerCodec, header), nil
	}
	return ib.deliver(ctx, m, in, codec, answerCodec, header)
}

// deliver is Deliver after decoding: m is in.Body decoded (the seed's
// HandleMessage, which is given the envelope as a value, starts here).
func (ib *Inbound) deliver(ctx context.Context, m *wire.UnifiedSynapseMessage, in *transport.Inbound, codec, answerCodec wire.Codec, header map[string]string) (transport.Answer, *Reply) {
	msgpack := codec == wire.Msgpack
	if s, ok := ctx.Value(hmacCheckedKey{}).(string); !ok || s != m.Sender.AgentID {
		if err := ib.CheckTransportSignature(m.Sender.AgentID, in.Header[wire.HeaderSignature], in.Body); err != nil {
			ib.n.m.refused.With(string(wire.AsError(err).Code)).Add(1)
			return errorAnswer(err, answerCodec, header), nil
		}
	}
	if seq, ok := ParseSequence(in.Header[HeaderSeq], in.Header[HeaderSeqPrev]); ok {
		ctx = WithSequence(ctx, seq)
	}
	reply, err := ib.receiveEnvelope(ctx, m, in.Body, msgpack)
	if err != nil {
		return errorAnswer(err, answerCodec, header), nil
	}
	reply.MessageID = m.MessageID
	if reply.Envelope != nil {
		var b []byte
		if msgpack {
			b, err = wire.EncodeEnvelopeMsgpack(reply.Envelope)
		} else {
			b, err = wire.EncodeEnvelopeJSON(reply.Envelope)
		}
		if err != nil {
			return errorAnswer(wire.Errorf(wire.CodeInternal, "encode envelope: %v", err), answerCodec, header), nil
		}
		return transport.Answer{Status: 200, Body: b, ContentType: codec.ContentType(), Header: header}, reply
	}
	var b []byte
	if answerCodec == wire.JSON {
		b = reply.Accepted.appendJSON(nil)
	} else if b, err = answerCodec.Marshal(reply.Accepted); err != nil {
		return errorAnswer(wire.Errorf(wire.CodeInternal, "encode answer: %v", err), answerCodec, header), nil
	}
	return transport.Answer{Status: reply.Status(), Body: b, ContentType: answerCodec.ContentType(), Header: header}, reply
}

// refusal is err as the registry's refusal: an error from applying the
// envelope that is not one (a store error) is a retriable one.
func refusal(err error) *wire.Error {
	var e *wire.Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, store.ErrClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return wire.Errorf(wire.CodeAgentNotReady, "%v", err)
	}
	return wire.Errorf(wire.CodeSysStorage, "apply the envelope: %v", err)
}

// errorAnswer is a refusal as the HTTP API writes it.
func errorAnswer(err error, codec wire.Codec, header map[string]string) transport.Answer {
	e := refusal(err)
	a := transport.Answer{Status: e.Status(), Error: e, ContentType: codec.ContentType(), Header: header}
	if b, merr := codec.Marshal(wire.ErrorBody{Error: e}); merr == nil {
		a.Body = b
	}
	if e.Retriable {
		a.RetryAfter = time.Second
	}
	return a
}
