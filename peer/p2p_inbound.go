package peer

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/peer/peerdb"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Inbound envelopes (SPEC §6). receiveEnvelope checks, in this order: the
// receiver is this agent (when named), the sender is a paired peer, the
// signature verifies with the key pinned for it (TP-ID003, 401 for both),
// the timestamp is within ±300 s (TP-ID005, 401), and the message_id was
// not processed before (answered as a duplicate, TP-ID004, with no second
// effect). Then the message is handed to the task engine by type.
//
// Message ids are remembered for seenTTL, far beyond the replay window,
// because a peer's outbox may redeliver an old message with a fresh
// timestamp. An id is recorded in the transaction of its effect when the
// engine writes one (agent.WithWrite), else by a lazy write after it
// (store.DB.UpdateLazy, with the next commit); a crash before that lets a
// redelivery through, which is harmless because every engine effect is
// idempotent by task id (a second task_request for a task id is ignored,
// a report that does not fit the task's state is dropped).

// Accepted is the answer to an envelope handled without a response
// envelope: {"accepted":true,"message_id":...}, with "duplicate":true and
// "code":"TP-ID004" when the message_id was already processed.
type Accepted struct {
	Accepted  bool           `json:"accepted" msgpack:"accepted"`
	MessageID string         `json:"message_id" msgpack:"message_id"`
	Duplicate bool           `json:"duplicate,omitempty" msgpack:"duplicate,omitempty"`
	Code      wire.ErrorCode `json:"code,omitempty" msgpack:"code,omitempty"`
}

// Reply is an accepted envelope's answer: a signed response envelope (for synchronous
// types such as p2p:capability_query; HTTP 200) or an Accepted (202, or
// 200 for a duplicate).
type Reply struct {
	// MessageID is the id of the envelope answered.
	MessageID string
	Envelope  *wire.UnifiedSynapseMessage
	Accepted  *Accepted
}

// Status is the HTTP status of the reply.
func (r *Reply) Status() int {
	if r.Envelope != nil || r.Accepted.Duplicate {
		return 200
	}
	return 202
}

// Inbound is the network's inbound pipeline (receiver.go, this file,
// p2p_order.go, p2p_batch.go, p2p_hmac.go, p2p_group.go): every door that
// takes envelopes from peers hands them to Deliver or ReceiveBatch. It
// owns what checking them needs to remember: the transport signatures
// seen, the message ids being applied, each sender's order, and the
// handler of group envelopes. Network.Inbound returns it. It reads the
// peer book (pairing.go) and the contracts, hands task messages to the
// engine and publishes what it accepted on the network's feed.
type Inbound struct {
	n     *Network
	a     *agent.Agent
	log   *slog.Logger
	clock agent.Clock
	p2p   *Config
	db    *store.DB // set by the network's Open

	hmac  hmacGuard
	seen  inflight
	order sequencer
	// groupHandler takes the group:* envelopes (p2p_group.go).
	groupHandler atomic.Pointer[GroupHandler]
}

func newInbound(n *Network) *Inbound {
	return &Inbound{n: n, a: n.a, log: n.log, clock: n.clock, p2p: &n.p2p}
}

// receiveEnvelope handles one decoded envelope from a peer for Deliver
// (receiver.go). raw is the envelope as received and msgpack its codec; a
// response envelope is built in the same codec. Refusals are *wire.Error.
func (ib *Inbound) receiveEnvelope(ctx context.Context, m *wire.UnifiedSynapseMessage, raw []byte, msgpack bool) (*Reply, error) {
	if !ib.n.ready() {
		return nil, wire.Errorf(wire.CodeAgentNotReady, "")
	}
	reply, err := ib.receive(ctx, m, raw, msgpack)
	if err != nil {
		ib.n.m.refused.With(string(wire.AsError(err).Code)).Add(1)
	}
	return reply, err
}

func (ib *Inbound) receive(ctx context.Context, m *wire.UnifiedSynapseMessage, raw []byte, msgpack bool) (*Reply, error) {
	me := ib.a.Identity().AgentID
	if m.Receiver.AgentID != "" && m.Receiver.AgentID != me {
		return nil, wire.Errorf(wire.CodeInvalidParams, "the message is for %q; this agent is %q", m.Receiver.AgentID, me).
			With("receiver", m.Receiver.AgentID)
	}
	p := ib.n.pairing.peers.get(m.Sender.AgentID)
	if p == nil {
		return nil, ib.n.pairing.unpaired(m) // pairing.go
	}
	if err := ib.verify(ctx, m, p); err != nil { // p2p_batch.go
		ib.a.Audit(agent.AuditSignatureFailed, m.Sender.AgentID, map[string]any{"message_id": m.MessageID, "message_type": string(m.MessageType), "error": err.Error()})
		return nil, wire.Errorf(wire.CodeIDUnknownSender, "%v", err).With("sender", m.Sender.AgentID)
	}
	s, sequenced := ctx.Value(seqKey{}).(Sequence)
	if err := wire.CheckTimestamp(m, ib.clock.Now(), wire.ReplayWindow); err != nil {
		if sequenced {
			ib.order.refused(m.Sender.AgentID, s)
		}
		if errors.Is(err, wire.ErrStaleTimestamp) {
			return nil, wire.Errorf(wire.CodeIDStaleTimestamp, "%v", err)
		}
		return nil, wire.Errorf(wire.CodeMessageFormatInvalid, "%v", err)
	}
	if m.MessageType == wire.MsgPairRequest {
		return ib.n.pairing.pairedHello(p, m), nil // pairing.go
	}
	if !wire.IsKnownMessageType(m.MessageType) && !isGroupMessage(m.MessageType) {
		// A type this agent does not know (a misspelt p2p:task_canceled)
		// is refused, not dropped: the sender learns it was not applied.
		if sequenced {
			ib.order.refused(m.Sender.AgentID, s)
		}
		return nil, wire.Errorf(wire.CodeMessageFormatInvalid, "unknown message type %q", m.MessageType).
			With("message_type", string(m.MessageType)).With("reason", "unknown_type")
	}
	// The contract with the sender, decryption (contracts.go).
	dm, err := ib.n.contracts.Admit(p.contractPeer(), m)
	if err != nil {
		if sequenced {
			ib.order.refused(m.Sender.AgentID, s)
		}
		return nil, err
	}
	// Ordered delivery (p2p_order.go): wait for the sender's previous
	// message, and let its next one go once this one's write is queued.
	if sequenced {
		t, err := ib.order.turn(ctx, m.Sender.AgentID, s)
		if err != nil {
			return nil, err
		}
		end := t.end
		t.end = func(applied bool) {
			end(applied)
			turnEnded(ctx) // a batch's hold (p2p_order.go)
		}
		ok := false
		defer func() {
			t.end(ok)
			if t.before != nil {
				<-t.before // the feed keeps the sender's order
			}
			close(t.told)
		}()
		ctx = agent.WithQueued(ctx, func() { t.end(true) })
		ctx = context.WithValue(ctx, tellKey{}, t)
		reply, err := ib.apply(ctx, p, m, dm, msgpack, raw)
		ok = err == nil
		return reply, err
	}
	return ib.apply(ctx, p, m, dm, msgpack, raw)
}

// apply runs a checked envelope once: a message id processed before is
// answered as a duplicate.
func (ib *Inbound) apply(ctx context.Context, p *peer, m, dm *wire.UnifiedSynapseMessage, msgpack bool, raw []byte) (*Reply, error) {
	at := ib.clock.Now().UTC()
	done, dup, err := ib.seen.begin(ctx, ib.db, m.MessageID, at)
	if err != nil {
		return nil, err
	}
	if dup {
		return &Reply{Accepted: &Accepted{Accepted: true, MessageID: m.MessageID, Duplicate: true, Code: wire.CodeIDDuplicate}}, nil
	}
	// The seen mark goes into the transaction of the message's effect when
	// there is one: no write of its own.
	var marked atomic.Bool
	ctx = agent.WithWrite(ctx, func(tx *store.Tx) error {
		tx.OnCommit(func() { marked.Store(true) })
		return peerdb.MarkSeen(tx, m.MessageID, at)
	})
	reply, err := ib.dispatch(ctx, p, dm, msgpack)
	done(err == nil, marked.Load())
	if err != nil {
		return nil, err
	}
	if ib.n.pairing.heard(p.rec.AgentID, nil) {
		peer := p.rec.AgentID
		ib.n.spawn(func() { ib.n.out.Wake(peer) })
	}
	label := string(m.MessageType)
	if !wire.IsKnownMessageType(m.MessageType) {
		label = "other"
	}
	ib.n.m.received.With(label).Add(1)
	rm := ReceivedMessage{MessageID: m.MessageID, Type: m.MessageType, From: m.Sender.AgentID, Msgpack: msgpack, Raw: raw, JSON: raw}
	if msgpack {
		if rm.JSON, err = wire.EncodeEnvelopeJSON(m); err != nil {
			rm.JSON = nil
		}
	}
	tell(ctx, func() { ib.n.feed.publish(rm) })
	return reply, nil
}

// dispatch hands a checked message to the engine by its type.
func (ib *Inbound) dispatch(ctx context.Context, p *peer, m *wire.UnifiedSynapseMessage, msgpack bool) (*Reply, error) {
	e, peer := ib.a, p.rec.AgentID
	accepted := &Reply{Accepted: &Accepted{Accepted: true, MessageID: m.MessageID}}
	var err error
	switch m.MessageType {
	case wire.MsgTaskRequest:
		var req wire.TaskRequestPayload
		if err := m.Payload.Decode(&req); err != nil {
			return nil, badPayload(m.MessageType, err)
		}
		err = e.AcceptFromPeer(ctx, peer, m.MessageID, &req)
	case wire.MsgTaskConfirm, wire.MsgTaskReject, wire.MsgTaskStatusUpdate, wire.MsgTaskNeedInfo,
		wire.MsgTaskNeedHuman, wire.MsgTaskComplete, wire.MsgTaskFailed, wire.MsgTaskAck:
		err = e.ReportFromPeer(ctx, peer, m.MessageType, m.Payload)
	case wire.MsgTaskCancel:
		var c wire.TaskCancelPayload
		if err := m.Payload.Decode(&c); err != nil {
			return nil, badPayload(m.MessageType, err)
		}
		err = e.CancelFromPeer(ctx, peer, &c)
	case wire.MsgTaskInfoProvided:
		info, derr := wire.DecodeInfoProvided(m.Payload)
		if derr != nil {
			return nil, derr
		}
		err = e.InfoFromPeer(ctx, peer, info)
	case wire.MsgHumanDecision:
		var d wire.HumanDecisionPayload
		if err := m.Payload.Decode(&d); err != nil {
			return nil, badPayload(m.MessageType, err)
		}
		err = e.DecisionFromPeer(peer, &d)
	case wire.MsgHeartbeat:
		var hb wire.HeartbeatPayload
		if !m.Payload.IsZero() {
			if err := m.Payload.Decode(&hb); err != nil {
				return nil, badPayload(m.MessageType, err)
			}
		}
		ib.n.pairing.heard(peer, &hb)
		ib.n.out.Wake(peer)
	case wire.MsgNegotiateRequest, wire.MsgNegotiateResponse:
		return ib.n.negotiation(ctx, p, m, msgpack)
	case wire.MsgCapabilityQuery:
		env, err := ib.capabilityResponse(peer, m.MessageID, msgpack)
		if err != nil {
			return nil, err
		}
		return &Reply{Envelope: env}, nil
	case wire.MsgSynapseMessage: // shown on the message feed (below)
		var msg wire.MessagePayload
		err := m.Payload.Decode(&msg)
		if err == nil {
			err = msg.Check()
		}
		if err != nil {
			return nil, badPayload(m.MessageType, err)
		}
	case wire.MsgAck, wire.MsgNack:
		var ack wire.AckPayload
		_ = m.Payload.Decode(&ack)
		lvl, msg := ib.log.Debug, "ack"
		if m.MessageType == wire.MsgNack {
			lvl, msg = ib.log.Warn, "nack"
		}
		lvl(msg, "peer", peer, "message_id", ack.MessageID, "correlation_id", m.CorrelationID, "error", ack.Error)
	default:
		if isGroupMessage(m.MessageType) {
			err = ib.groupMessage(ctx, peer, m)
			break
		}
		ib.log.Debug("message accepted without effect", "peer", peer, "type", m.MessageType, "message_id", m.MessageID)
	}
	if err != nil {
		return nil, err
	}
	return accepted, nil
}

// capabilityResponse answers p2p:capability_query with this agent's
// capabilities, signed, its payload in the codec of the query.
func (ib *Inbound) capabilityResponse(peer, corr string, msgpack bool) (*wire.UnifiedSynapseMessage, error) {
	var pl wire.RawPayload
	var err error
	if msgpack {
		pl, err = wire.NewMsgpackPayload(ib.a.Capabilities())
	} else {
		pl, err = wire.NewJSONPayload(ib.a.Capabilities())
	}
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "capabilities: %v", err)
	}
	env, err := ib.n.envelope(wire.MsgCapabilityResponse, peer, "", corr, pl)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "sign capability response: %v", err)
	}
	return env, nil
}

// inflight serializes the copies of one message id and remembers ids whose
// seen record is not durable yet.
type inflight struct {
	mu     sync.Mutex
	busy   map[string]chan struct{}
	recent map[string]struct{}
}

// begin claims id. dup is true when id was processed before; otherwise
// done must be called with whether the message took effect and whether
// its seen mark was committed with it (else id is recorded as seen by a
// lazy write: store.DB.UpdateLazy). A copy that arrives while another is
// processed waits for it.
func (in *inflight) begin(ctx context.Context, db *store.DB, id string, now time.Time) (done func(ok, marked bool), dup bool, err error) {
	for { // each wait ends with the other copy
		in.mu.Lock()
		if in.busy == nil {
			in.busy, in.recent = map[string]chan struct{}{}, map[string]struct{}{}
		}
		if _, ok := in.recent[id]; ok {
			in.mu.Unlock()
			return nil, true, nil
		}
		ch, ok := in.busy[id]
		if !ok {
			in.busy[id] = make(chan struct{})
			in.mu.Unlock()
			break
		}
		in.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, false, wire.Errorf(wire.CodeAgentNotReady, "another copy of message %s is still being processed", id)
		}
	}
	release := func(ok bool) {
		in.mu.Lock()
		ch := in.busy[id]
		delete(in.busy, id)
		if ok {
			in.recent[id] = struct{}{}
		}
		in.mu.Unlock()
		close(ch)
	}
	seen := false
	if err := db.View(func(tx *store.Tx) error { seen = peerdb.Seen(tx, id); return nil }); err != nil {
		release(false)
		return nil, false, wire.Errorf(wire.CodeSysStorage, "read seen messages: %v", err)
	}
	if seen {
		release(false)
		return nil, true, nil
	}
	return func(ok, marked bool) {
		release(ok && !marked)
		if !ok || marked {
			return
		}
		// Recorded without waiting, with the next commit: until the record
		// is durable, recent answers for it.
		db.UpdateLazy(func(tx *store.Tx) error { return peerdb.MarkSeen(tx, id, now) }, func(error) {
			in.mu.Lock()
			delete(in.recent, id)
			in.mu.Unlock()
		})
	}, false, nil
}

// pruneBatch bounds the records one pruning transaction deletes.
const pruneBatch = 1000

// Prune forgets message ids older than seenTTL (the agent's Prune calls
// it).
func (ib *Inbound) Prune(ctx context.Context) error {
	cutoff := ib.clock.Now().Add(-seenTTL)
	for range 1000 { // at most a million ids per pass
		var k int
		err := ib.db.Update(ctx, func(tx *store.Tx) error {
			var err error
			k, err = peerdb.PruneSeen(tx, cutoff, pruneBatch)
			return err
		})
		if err != nil || k < pruneBatch {
			return err
		}
	}
	return nil
}

func badPayload(msgType wire.MessageType, err error) error {
	return wire.Errorf(wire.CodeMessageFormatInvalid, "%s payload: %v", msgType, err)
}
