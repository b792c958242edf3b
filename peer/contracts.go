package peer

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/synapse-edge/synapse/contracts"
	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// Contracts (package contracts) on the network. The contract manager is a
// filter the network calls once each way: every outgoing envelope is
// sealed by it before it is signed and sent (Manager.Seal), every
// envelope received is admitted by it before it takes effect
// (Manager.Admit). It sends nothing itself: the negotiations it needs run
// here (contractor), over the network's own send, and negotiation
// envelopes are answered by it (Manager.Answer).

// Contracts is the agent's contract manager: list, read and revoke
// contracts (Network.Negotiate makes one).
func (n *Network) Contracts() *contracts.Manager { return n.contracts }

// Negotiate asks peer for a contract with req (candidate lists left nil
// are filled from the configuration) and stores the contract it answers
// with; see contracts.Manager.Begin and Negotiation.Conclude. A refusal is
// the peer's TPError as is (TP-NEG00x with the seed's
// rejected/reason/alternative_proposal in details).
func (n *Network) Negotiate(ctx context.Context, peerID string, req negotiate.Request) (*contracts.Info, error) {
	p := n.pairing.peers.get(peerID)
	if p == nil {
		return nil, errNoPeer(peerID)
	}
	return n.contractor.negotiate(ctx, p, req)
}

func (p *peer) contractPeer() contracts.Peer {
	return contracts.Peer{ID: p.rec.AgentID, SystemID: p.rec.SystemID, Endpoint: p.rec.Endpoint, Key: p.pub}
}

// contractor runs the network's side of the contracts: the negotiations
// (one at a time per peer) and every outbox message sent under the active
// contract with its peer, negotiated first when there is none.
type contractor struct {
	n *Network

	// mu guards locks, one per peer: the automatic negotiations with a
	// peer run one at a time (ensure).
	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

func newContractor(n *Network) *contractor {
	return &contractor{n: n, locks: map[string]*sync.Mutex{}}
}

// negotiate runs one negotiation with p: each attempt sends a fresh
// signed negotiate_request, within negotiation.timeout_ms, and failed
// attempts are retried up to negotiation.retries times before TP-NEG020
// (negotiate.Exchange). The messages that waited for a contract go once
// it is made.
func (k *contractor) negotiate(ctx context.Context, p *peer, req negotiate.Request) (*contracts.Info, error) {
	n := k.n
	g, err := n.contracts.Begin(p.contractPeer(), req)
	if err != nil {
		return nil, err
	}
	_, err = negotiate.Exchange(ctx, n.contracts.Attempts(), func(ctx context.Context, attempt int) (struct{}, error) {
		m, err := g.Next()
		if err != nil {
			return struct{}{}, err
		}
		return struct{}{}, g.Answered(m, n.sendEnvelope(ctx, p.rec.Endpoint, m))
	})
	if err != nil {
		return nil, err
	}
	ci, err := g.Conclude(ctx)
	if err != nil {
		return nil, err
	}
	k.wake(p.rec.AgentID)
	return ci, nil
}

// wake lets the messages that wait for peer go now; it does not wait for
// them.
func (k *contractor) wake(peer string) { k.n.spawn(func() { k.n.out.Wake(peer) }) }

// lock serialises the automatic negotiations with one peer.
func (k *contractor) lock(peer string) func() {
	k.mu.Lock()
	l := k.locks[peer]
	if l == nil {
		l = &sync.Mutex{}
		k.locks[peer] = l
	}
	k.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// ensure returns the active contract with p, negotiating one when there
// is none or when the active one is stale (the peer refused it: its id).
// It returns no contract and no failure for a peer that does not
// negotiate. A failure is what the message that needed the contract gets
// (contracts.AutoFailure).
func (k *contractor) ensure(ctx context.Context, p *peer, stale string) (*negotiate.Contract, *outbox.Failure) {
	n := k.n
	peerID := p.rec.AgentID
	unlock := k.lock(peerID)
	defer unlock()
	c, err := n.contracts.Active(peerID)
	if err != nil {
		return nil, &outbox.Failure{Err: fmt.Errorf("%w: %v", transport.ErrNotDelivered, err)}
	}
	if c != nil && c.ContractID != stale {
		return c, nil
	}
	ci, err := k.negotiate(ctx, p, negotiate.Request{SessionPurpose: contracts.AutoSessionPurpose})
	if err == nil {
		n.log.Info("contract negotiated before delivery", "peer", peerID, "contract_id", ci.Contract.ContractID,
			"tier", ci.Contract.CommunicationTier, "security_level", ci.Contract.SecurityLevel)
		return ci.Contract, nil
	}
	o := contracts.AutoFailure(peerID, err)
	if o == nil {
		n.log.Warn("the peer does not negotiate: sending without a contract", "peer", peerID, "err", err)
		return nil, nil
	}
	return nil, deliveryFailure(o)
}

// seal puts m, built for p and unsigned, under the active contract with
// p, negotiating one first when there is none (stale: the id of a
// contract the peer refused). It returns the contract m went under (nil:
// none).
func (k *contractor) seal(ctx context.Context, p *peer, m *wire.UnifiedSynapseMessage, stale string) (*negotiate.Contract, *outbox.Failure) {
	cm := k.n.contracts
	if stale == "" {
		c, err := cm.Seal(p.contractPeer(), m)
		switch {
		case err == nil:
			return c, nil
		case errors.Is(err, contracts.ErrUnread):
			return nil, &outbox.Failure{Err: fmt.Errorf("%w: %v", transport.ErrNotDelivered, err)}
		case !errors.Is(err, contracts.ErrNoContract):
			return nil, &outbox.Failure{Err: err, Permanent: true}
		}
	}
	c, failed := k.ensure(ctx, p, stale)
	if failed != nil {
		return nil, failed
	}
	if err := cm.SealUnder(c, p.contractPeer(), m); err != nil {
		return nil, &outbox.Failure{Err: err, Permanent: true}
	}
	return c, nil
}

// send signs and sends one outbox message to p under the active
// contract, negotiating one first when there is none. A failure of the
// negotiation (or of signing) is returned as an *outbox.Failure, else the
// outcome of the send.
func (k *contractor) send(ctx context.Context, p *peer, msgType wire.MessageType, id, corr string, pl wire.RawPayload, s Sequence) (transport.Outcome, *outbox.Failure) {
	n := k.n
	peerID := p.rec.AgentID
	out, c, derr := k.sendOnce(ctx, p, msgType, id, corr, pl, s, "")
	if derr != nil || c == nil || !contracts.RefusesContract(out) {
		return out, derr
	}
	// The peer does not hold c as active: a new contract, and once more.
	n.log.Info("the peer refused the contract: negotiating again", "peer", peerID, "contract_id", c.ContractID, "err", out.Err)
	if err := n.contracts.RevokedByPeer(ctx, peerID, c.ContractID); err != nil {
		n.log.Warn("record the peer's refusal of a contract", "contract_id", c.ContractID, "err", err)
	}
	out, _, derr = k.sendOnce(ctx, p, msgType, id, corr, pl, s, c.ContractID)
	return out, derr
}

// sendOnce builds the message, seals it (seal) and posts it: over A2A
// when its contract says so, else as a signed envelope.
func (k *contractor) sendOnce(ctx context.Context, p *peer, msgType wire.MessageType, id, corr string, pl wire.RawPayload, s Sequence, stale string) (transport.Outcome, *negotiate.Contract, *outbox.Failure) {
	n := k.n
	m := n.message(msgType, p.rec.AgentID, id, corr, pl)
	c, derr := k.seal(ctx, p, m, stale)
	if derr != nil {
		return transport.Outcome{}, c, derr
	}
	to := p.rec.Endpoint
	if ep, ok := n.a2aDestination(c, msgType); ok {
		// A2A carries no contract (a2aDestination: nor anything sealed).
		m.ProtocolContractRef = ""
		to = ep
	}
	if err := n.a.Sign(m); err != nil {
		return transport.Outcome{}, c, &outbox.Failure{Err: err, Permanent: true}
	}
	return n.sendEnvelopeSeq(ctx, to, m, s), c, nil
}

// negotiation answers a negotiate_request or negotiate_response.
func (n *Network) negotiation(ctx context.Context, p *peer, m *wire.UnifiedSynapseMessage, msgpack bool) (*Reply, error) {
	env, err := n.contracts.Answer(ctx, p.contractPeer(), m, msgpack)
	switch {
	case err != nil:
		return nil, err
	case env == nil:
		return &Reply{Accepted: &Accepted{Accepted: true, MessageID: m.MessageID}}, nil
	}
	n.contractor.wake(p.rec.AgentID) // its messages that waited for a contract
	return &Reply{Envelope: env}, nil
}

// deliveryFailure is a failed automatic negotiation as the outbox records
// it (contracts.AutoFailure classified it).
func deliveryFailure(o *transport.Outcome) *outbox.Failure {
	d := &outbox.Failure{Err: o.Err, Unreachable: o.Unreached, Permanent: o.Class == transport.Permanent}
	if o.Error != nil {
		d.Code = o.Error.Code
	}
	return d
}
