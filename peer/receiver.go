package peer

import (
	"context"
	"time"

	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// Receiver is the network's entry point for wires that receive envelopes
// themselves (MQTT: an envelope published to this agent's inbox): it
// checks and applies one envelope exactly as POST /message does (the HMAC
// header, the per-sender order of X-Synapse-Seq, Receive) and returns what
// that route would answer, after the envelope's effects are on disk.
func (n *Network) Receiver() transport.Receiver {
	return transport.ReceiverFunc(n.receiveInbound)
}

func (n *Network) receiveInbound(ctx context.Context, in *transport.Inbound) transport.Answer {
	codec := wire.CodecFor(in.ContentType)
	msgpack := codec == wire.Msgpack
	if len(in.Body) == 0 {
		return errorAnswer(wire.Errorf(wire.CodeMessageFormatInvalid, "the message is empty: send one envelope"), codec)
	}
	m, err := wire.DecodeEnvelope(in.Body, msgpack)
	if err != nil {
		return errorAnswer(err, codec)
	}
	if err := n.CheckTransportSignature(m.Sender.AgentID, in.Header[wire.HeaderSignature], in.Body); err != nil {
		return errorAnswer(err, codec)
	}
	if seq, ok := ParseSequence(in.Header[HeaderSeq], in.Header[HeaderSeqPrev]); ok {
		ctx = WithSequence(ctx, seq)
	}
	header := map[string]string{HeaderOrdering: OrderingPerSender}
	reply, err := n.Receive(ctx, m, in.Body, msgpack)
	if err != nil {
		a := errorAnswer(err, codec)
		a.Header = header
		return a
	}
	if reply.Envelope != nil {
		var b []byte
		if msgpack {
			b, err = wire.EncodeEnvelopeMsgpack(reply.Envelope)
		} else {
			b, err = wire.EncodeEnvelopeJSON(reply.Envelope)
		}
		if err != nil {
			return errorAnswer(wire.Errorf(wire.CodeInternal, "encode envelope: %v", err), codec)
		}
		return transport.Answer{Status: 200, Body: b, ContentType: codec.ContentType(), Header: header}
	}
	b, err := codec.Marshal(reply.Accepted)
	if err != nil {
		return errorAnswer(wire.Errorf(wire.CodeInternal, "encode answer: %v", err), codec)
	}
	return transport.Answer{Status: reply.Status(), Body: b, ContentType: codec.ContentType(), Header: header}
}

// errorAnswer is a refusal as the HTTP API writes it.
func errorAnswer(err error, codec wire.Codec) transport.Answer {
	e := wire.AsError(err)
	a := transport.Answer{Status: e.Status(), Error: e, ContentType: codec.ContentType()}
	if b, merr := codec.Marshal(wire.ErrorBody{Error: e}); merr == nil {
		a.Body = b
	}
	if e.Code == wire.CodeRateLimited || e.Code == wire.CodeSysOverloaded {
		a.RetryAfter = time.Second
	}
	return a
}
