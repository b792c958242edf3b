package peer

import (
	"context"
	"fmt"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Group messages (SPEC §10) travel between agents as group:* envelopes.
// The agent checks them like every envelope (paired sender, signature,
// timestamp, message id not seen) and hands them to the handler the group
// layer registers; it sends them through the durable outbox like every
// message to a peer.

// GroupHandler handles one checked group:* envelope from the paired peer
// from. An error is the refusal the sender gets (a *wire.Error; a
// non-retriable 4xx makes the sender give the message up) and leaves the
// message id unrecorded, so that a redelivery is handled again.
type GroupHandler func(ctx context.Context, from string, m *wire.UnifiedSynapseMessage) error

// HandleGroupMessages registers h for the group:* message types; nil
// removes it. Without a handler group messages are refused with
// capability_lacking.
func (ib *Inbound) HandleGroupMessages(h GroupHandler) {
	if h == nil {
		ib.groupHandler.Store(nil)
		return
	}
	ib.groupHandler.Store(&h)
}

// groupMessage hands a group envelope to the registered handler.
func (ib *Inbound) groupMessage(ctx context.Context, from string, m *wire.UnifiedSynapseMessage) error {
	h := ib.groupHandler.Load()
	if h == nil {
		return wire.Errorf(wire.CodeCapabilityLacking, "this agent does not take part in groups").With("message_type", string(m.MessageType))
	}
	return (*h)(ctx, from, m)
}

// isGroupMessage reports whether t is one of the group:* types.
func isGroupMessage(t wire.MessageType) bool {
	switch t {
	case wire.MsgGroupInvite, wire.MsgGroupJoin, wire.MsgGroupLeave, wire.MsgGroupDisband, wire.MsgGroupMessage,
		wire.MsgGroupBallot, wire.MsgGroupVoteOpen, wire.MsgGroupVoteResult, wire.MsgGroupTask, wire.MsgGroupTaskResult:
		return true
	}
	return false
}

// QueueToPeer queues a message of type msgType with payload (encoded as
// JSON) for the paired peer in tx: it is signed and sent by the outbox
// once tx commits, and not at all if tx rolls back. Use it to announce a
// change in the transaction that makes it.
func (n *Network) QueueToPeer(tx *store.Tx, peer string, msgType wire.MessageType, payload any) error {
	if !n.ready() {
		return wire.Errorf(wire.CodeAgentNotReady, "")
	}
	if !n.pairing.Known(peer) {
		return wire.Errorf(wire.CodeInvalidParams, "%q is not a paired peer (POST /agents to pair it)", peer).With("agent_id", peer)
	}
	if err := enqueue(n.out, tx, agent.Outgoing{Peer: peer, Type: msgType, Payload: payload}); err != nil {
		return fmt.Errorf("queue %s for %s: %w", msgType, peer, err)
	}
	return nil
}

// SendToPeer is QueueToPeer in a transaction of its own: it returns once
// the message is durable in the outbox.
func (n *Network) SendToPeer(ctx context.Context, peer string, msgType wire.MessageType, payload any) error {
	_, err := n.Send(ctx, agent.Outgoing{Peer: peer, Type: msgType, Payload: payload})
	return err
}

// Send is SendToPeer of m (its Peer, Type, CorrelationID and Payload); it
// returns the message's id, the message_id its envelope will carry.
func (n *Network) Send(ctx context.Context, m agent.Outgoing) (id string, err error) {
	if !n.ready() {
		return "", wire.Errorf(wire.CodeAgentNotReady, "")
	}
	if m.URL != "" || !n.pairing.Known(m.Peer) {
		return "", wire.Errorf(wire.CodeInvalidParams, "%q is not a paired peer (POST /agents to pair it)", m.Peer).With("agent_id", m.Peer)
	}
	err = n.db.Update(ctx, func(tx *store.Tx) error {
		id, err = n.out.Enqueue(tx, outgoing(m))
		return err
	})
	if err != nil {
		return "", fmt.Errorf("queue %s for %s: %w", m.Type, m.Peer, err)
	}
	return id, nil
}
