//go:build grpc

package grpcapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/peer/frame"
	pb "github.com/synapse-edge/synapse/proto"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// Limits of the message RPCs.
const (
	// maxStreamMessages bounds the envelopes of one StreamMessages call.
	maxStreamMessages = 10_000_000
	// maxEnvelope bounds one envelope, as on the WebSocket.
	maxEnvelope = 1 << 20
)

// SendMessage is POST /message: one signed envelope from a paired peer,
// handed to the one receiver (peer.Inbound.Deliver). The headers of POST
// /message come as call metadata (x-synapse-signature, x-synapse-seq,
// x-synapse-seq-prev) or, as on StreamMessages, in a header block before
// the envelope (peer/frame). Without an envelope it is seed 003 §4.2's
// SendMessage, as on REST: receiver_id, content_type and payload_json ask
// this agent to send that peer a message of its own (sendOwn).
func (s *Server) SendMessage(ctx context.Context, in *pb.SendMessageRequest) (*pb.SendMessageResponse, error) {
	if len(in.GetEnvelope()) == 0 && (in.GetPayloadJson() != "" || in.GetContentType() != "") {
		return s.sendOwn(ctx, in)
	}
	return s.sendMessage(ctx, in, true)
}

// sendOwn sends the paired peer receiver_id a synapse:message envelope
// signed by this agent, through its outbox (a token with tasks:write);
// status is queued, message_id the envelope's.
func (s *Server) sendOwn(ctx context.Context, in *pb.SendMessageRequest) (*pb.SendMessageResponse, error) {
	if err := s.needNet(); err != nil {
		return nil, err
	}
	if _, err := s.authorizeScope(ctx, auth.ScopeTasksWrite); err != nil {
		return nil, err
	}
	req := wire.SendMessageRequest{ReceiverID: in.GetReceiverId(), ContentType: in.GetContentType(), PayloadJSON: in.GetPayloadJson(),
		CorrelationID: in.GetCorrelationId(), ConversationID: in.GetConversationId()}
	pl, err := req.Message()
	if err != nil {
		return nil, err
	}
	id, err := s.net.Send(ctx, agent.Outgoing{Peer: req.ReceiverID, Type: wire.MsgSynapseMessage, CorrelationID: req.CorrelationID, Payload: pl})
	if err != nil {
		return nil, err
	}
	return &pb.SendMessageResponse{MessageId: id, Status: wire.MessageQueued}, nil
}

// sendMessage is SendMessage; metadata tells whether the call's metadata
// may carry the headers (not on a stream, whose metadata is the stream's).
func (s *Server) sendMessage(ctx context.Context, in *pb.SendMessageRequest, metadataHeaders bool) (*pb.SendMessageResponse, error) {
	if err := s.needNet(); err != nil {
		return nil, err
	}
	if len(in.GetEnvelope()) == 0 {
		return nil, wire.Errorf(wire.CodeMessageFormatInvalid, "envelope is empty: send one signed envelope").With("field", "envelope")
	}
	header, body, err := frame.Split(in.GetEnvelope())
	if err != nil {
		return nil, err
	}
	if header == nil && metadataHeaders {
		header = map[string]string{}
		md, _ := metadata.FromIncomingContext(ctx)
		for _, name := range []string{wire.HeaderSignature, peer.HeaderSeq, peer.HeaderSeqPrev} {
			if v := md.Get(name); len(v) > 0 {
				header[name] = v[0]
			}
		}
	}
	if id := in.GetReceiverId(); id != "" {
		m, err := wire.DecodeEnvelope(body, in.GetMsgpack())
		if err != nil {
			return nil, err
		}
		if id != m.Receiver.AgentID {
			return nil, wire.Errorf(wire.CodeInvalidParams, "receiver_id %q is not the envelope's receiver %q", id, m.Receiver.AgentID).With("field", "receiver_id")
		}
	}
	ct := wire.ContentJSON
	if in.GetMsgpack() {
		ct = wire.ContentMsgpack
	}
	a, reply := s.net.Inbound().Deliver(ctx, &transport.Inbound{Kind: transport.Envelope, Body: bytes.Clone(body), ContentType: ct, Header: header})
	if reply == nil {
		return nil, a.Error
	}
	if reply.Envelope != nil {
		return &pb.SendMessageResponse{MessageId: reply.MessageID, Status: "replied", ReplyEnvelope: a.Body}, nil
	}
	st := "accepted"
	if reply.Accepted.Duplicate {
		st = "duplicate"
	}
	return &pb.SendMessageResponse{MessageId: reply.Accepted.MessageID, Status: st, Code: string(reply.Accepted.Code)}, nil
}

func encodeEnvelope(m *wire.UnifiedSynapseMessage, msgpack bool) ([]byte, error) {
	var b []byte
	var err error
	if msgpack {
		b, err = wire.EncodeEnvelopeMsgpack(m)
	} else {
		b, err = wire.EncodeEnvelopeJSON(m)
	}
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "encode envelope: %v", err)
	}
	return b, nil
}

// StreamMessages is GET /messages/stream: every message carries one
// signed envelope (envelope, msgpack) and is answered in order with what
// SendMessage answers, as a message whose message_type is accepted,
// duplicate, the response envelope's type (envelope set), or error
// (error_json set); correlation_id is the envelope's message_id. A caller
// with the admin scope also receives every envelope the agent accepts.
func (s *Server) StreamMessages(stream pb.SynapseMessageService_StreamMessagesServer) error {
	if err := s.needNet(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	var mu sync.Mutex
	send := func(m *pb.SynapseMessage) error {
		mu.Lock()
		defer mu.Unlock()
		return stream.Send(m)
	}
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	if principal(ctx).Can(auth.ScopeAdmin) {
		feed := s.net.Messages()
		if feed == nil {
			return wire.Errorf(wire.CodeAgentNotReady, "")
		}
		last := feed.Last()
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = s.pumpFeed(ctx, feed, last, send)
		}()
	}
	// The headers tell an observer that it sees every envelope from now on.
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	for range maxStreamMessages {
		in, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := send(s.answer(ctx, in)); err != nil {
			return err
		}
	}
	return wire.Errorf(wire.CodeRateLimited, "one stream carries at most %d envelopes", maxStreamMessages)
}

// answer handles one envelope of StreamMessages.
func (s *Server) answer(ctx context.Context, in *pb.SynapseMessage) *pb.SynapseMessage {
	fail := func(id string, err error) *pb.SynapseMessage {
		b, _ := json.Marshal(wire.AsError(err))
		return &pb.SynapseMessage{CorrelationId: id, MessageType: "error", ContentType: "json", ErrorJson: string(b),
			Timestamp: s.a.Clock().Now().UnixMilli()}
	}
	if len(in.GetEnvelope()) > maxEnvelope {
		return fail(in.GetId(), wire.Errorf(wire.CodePayloadTooLarge, "an envelope is at most %d bytes", maxEnvelope))
	}
	resp, err := s.sendMessage(ctx, &pb.SendMessageRequest{Envelope: in.GetEnvelope(), Msgpack: in.GetMsgpack(), ReceiverId: in.GetReceiverId()}, false)
	if err != nil {
		return fail(in.GetId(), err)
	}
	out := &pb.SynapseMessage{Id: resp.GetMessageId(), CorrelationId: resp.GetMessageId(), MessageType: resp.GetStatus(),
		Timestamp: s.a.Clock().Now().UnixMilli(), Msgpack: in.GetMsgpack(), ContentType: "json"}
	if len(resp.GetReplyEnvelope()) > 0 {
		m, err := wire.DecodeEnvelope(resp.GetReplyEnvelope(), in.GetMsgpack())
		if err == nil {
			out = envelopeMessage(m, resp.GetReplyEnvelope(), in.GetMsgpack())
			out.CorrelationId = m.CorrelationID
		}
		return out
	}
	b, _ := json.Marshal(&peer.Accepted{Accepted: true, MessageID: resp.GetMessageId(), Duplicate: resp.GetStatus() == "duplicate", Code: wire.ErrorCode(resp.GetCode())})
	out.PayloadJson = string(b)
	return out
}

// ReceiveCallback is GET /messages/callback: every envelope the agent
// accepts from now on, until the call ends or the server shuts down.
func (s *Server) ReceiveCallback(_ *emptypb.Empty, stream pb.SynapseMessageService_ReceiveCallbackServer) error {
	if err := s.needNet(); err != nil {
		return err
	}
	feed := s.net.Messages()
	if feed == nil {
		return wire.Errorf(wire.CodeAgentNotReady, "")
	}
	last := feed.Last()
	// The headers tell the client that everything accepted from now on
	// comes on this stream.
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	return s.pumpFeed(stream.Context(), feed, last, stream.Send)
}

// pumpFeed sends the feed's envelopes after last, reloading from the
// feed's ring when the subscription lags.
func (s *Server) pumpFeed(ctx context.Context, feed *peer.MessageFeed, last uint64, send func(*pb.SynapseMessage) error) error {
	for range maxResubscribe {
		sub := feed.Subscribe()
		kept, _ := feed.Since(last)
		for _, m := range kept {
			if err := send(receivedMessage(m)); err != nil {
				sub.Close()
				return err
			}
			last = m.Seq
		}
		lagged, err := s.followFeed(ctx, sub, &last, send)
		sub.Close()
		if !lagged {
			return err
		}
	}
	return wire.Errorf(wire.CodeInternal, "message feed resubscribed too often")
}

func (s *Server) followFeed(ctx context.Context, sub *peer.FeedSubscription, last *uint64, send func(*pb.SynapseMessage) error) (bool, error) {
	for {
		select {
		case m, ok := <-sub.C:
			if !ok {
				return sub.Lagged(), nil
			}
			if m.Seq <= *last {
				continue
			}
			if err := send(receivedMessage(m)); err != nil {
				return false, err
			}
			*last = m.Seq
		case <-ctx.Done():
			return false, nil
		case <-s.done:
			return false, wire.Errorf(wire.CodeAgentNotReady, "the server is shutting down")
		}
	}
}

// receivedMessage is an envelope of the feed as a SynapseMessage; its
// envelope field is the envelope exactly as received (its signature
// verifies).
func receivedMessage(r peer.ReceivedMessage) *pb.SynapseMessage {
	m, err := wire.DecodeEnvelope(r.Raw, r.Msgpack)
	if err != nil {
		return &pb.SynapseMessage{Id: r.MessageID, SenderId: r.From, MessageType: string(r.Type), Envelope: r.Raw, Msgpack: r.Msgpack, Seq: r.Seq}
	}
	out := envelopeMessage(m, r.Raw, r.Msgpack)
	var doc struct {
		Payload json.RawMessage `json:"payload"`
	}
	if json.Unmarshal(r.JSON, &doc) == nil && len(doc.Payload) > 0 {
		out.PayloadJson = string(doc.Payload)
	}
	out.Seq = r.Seq
	return out
}

// envelopeMessage maps an envelope's fields to a SynapseMessage.
func envelopeMessage(m *wire.UnifiedSynapseMessage, raw []byte, msgpack bool) *pb.SynapseMessage {
	out := &pb.SynapseMessage{Id: m.MessageID, SenderId: m.Sender.AgentID, ReceiverId: m.Receiver.AgentID,
		ContentType: m.ContentType, CorrelationId: m.CorrelationID, ConversationId: m.ConversationID,
		MessageType: string(m.MessageType), Envelope: raw, Msgpack: msgpack}
	if ts, err := time.Parse(time.RFC3339Nano, m.Timestamp); err == nil {
		out.Timestamp = ts.UnixMilli()
	}
	return out
}
