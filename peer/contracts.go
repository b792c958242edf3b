package peer

import (
	"context"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/contracts"
	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// Contracts (package contracts) on the network: every envelope received
// is admitted by the contract manager before it takes effect, negotiation
// envelopes are answered by it, and every outbox message goes under the
// active contract with its peer, negotiated first when there is none
// (sendUnderContract).

// Contracts is the agent's contract manager: negotiate, list, read and
// revoke contracts.
func (n *Network) Contracts() *contracts.Manager { return n.contracts }

// contractNet is the network as the contract manager uses it.
type contractNet struct{ n *Network }

var _ contracts.Network = contractNet{}

func (p *peer) contractPeer() contracts.Peer {
	return contracts.Peer{ID: p.rec.AgentID, SystemID: p.rec.SystemID, Endpoint: p.rec.Endpoint, Key: p.pub}
}

func (c contractNet) Peer(id string) (contracts.Peer, bool) {
	p := c.n.pairing.peers.get(id)
	if p == nil {
		return contracts.Peer{}, false
	}
	return p.contractPeer(), true
}

func (c contractNet) Send(ctx context.Context, p contracts.Peer, m *wire.UnifiedSynapseMessage) transport.Outcome {
	return c.n.sendEnvelope(ctx, p.Endpoint, m)
}

func (c contractNet) Enqueue(tx *store.Tx, m agent.Outgoing) error { return enqueue(c.n.out, tx, m) }

func (c contractNet) Wake(peer string) { c.n.spawn(func() { c.n.out.Wake(peer) }) }

// negotiation answers a negotiate_request or negotiate_response.
func (n *Network) negotiation(ctx context.Context, p *peer, m *wire.UnifiedSynapseMessage, msgpack bool) (*Reply, error) {
	env, err := n.contracts.Answer(ctx, p.contractPeer(), m, msgpack)
	switch {
	case err != nil:
		return nil, err
	case env == nil:
		return &Reply{Accepted: &Accepted{Accepted: true, MessageID: m.MessageID}}, nil
	}
	return &Reply{Envelope: env}, nil
}

// sendUnderContract signs and sends one outbox message to p under the
// active contract, negotiating one first when there is none. A failure of
// the negotiation (or of signing) is returned as an *outbox.Failure, else the
// outcome of the send.
func (n *Network) sendUnderContract(ctx context.Context, p *peer, msgType wire.MessageType, id, corr string, pl wire.RawPayload, s Sequence) (transport.Outcome, *outbox.Failure) {
	peerID := p.rec.AgentID
	var c *negotiate.Contract
	if !contracts.Exempt(msgType) {
		var failed *transport.Outcome
		if c, failed = n.contracts.Ensure(ctx, peerID, ""); failed != nil {
			return transport.Outcome{}, deliveryFailure(failed)
		}
	}
	out, derr := n.sendUnder(ctx, p, c, msgType, id, corr, pl, s)
	if derr != nil || c == nil || !contracts.RefusesContract(out) {
		return out, derr
	}
	// The peer does not hold c as active: a new contract, and once more.
	n.log.Info("the peer refused the contract: negotiating again", "peer", peerID, "contract_id", c.ContractID, "err", out.Err)
	if err := n.contracts.RevokedByPeer(ctx, peerID, c.ContractID); err != nil {
		n.log.Warn("record the peer's refusal of a contract", "contract_id", c.ContractID, "err", err)
	}
	c, failed := n.contracts.Ensure(ctx, peerID, c.ContractID)
	if failed != nil {
		return transport.Outcome{}, deliveryFailure(failed)
	}
	return n.sendUnder(ctx, p, c, msgType, id, corr, pl, s)
}

// sendUnder signs the message under c (nil: none) and posts it.
func (n *Network) sendUnder(ctx context.Context, p *peer, c *negotiate.Contract, msgType wire.MessageType, id, corr string, pl wire.RawPayload, s Sequence) (transport.Outcome, *outbox.Failure) {
	if to, ok := n.a2aDestination(c, msgType); ok {
		return n.sendA2A(ctx, to, p.rec.AgentID, msgType, id, corr, pl, s) // a2a.go
	}
	m, err := n.contracts.Envelope(c, msgType, p.rec.AgentID, id, corr, pl)
	if err != nil {
		return transport.Outcome{}, &outbox.Failure{Err: err, Permanent: true}
	}
	return n.sendEnvelopeSeq(ctx, p.rec.Endpoint, m, s), nil
}

// deliveryFailure is a failed automatic negotiation as the outbox records
// it (contracts.Manager.Ensure classified it).
func deliveryFailure(o *transport.Outcome) *outbox.Failure {
	d := &outbox.Failure{Err: o.Err, Unreachable: o.Unreached, Permanent: o.Class == transport.Permanent}
	if o.Error != nil {
		d.Code = o.Error.Code
	}
	return d
}
