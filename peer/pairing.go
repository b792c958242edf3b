package peer

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/internal/agentid"
	"github.com/synapse-edge/synapse/peer/pins"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Mutual pairing. When AddPeer has pinned the other agent's key here, it
// sends that agent a peer:pair_request (directly, not through the outbox)
// whose payload is this agent's identity with its public key. The other
// agent, if it has not paired this one, does not trust it: it verifies the
// request with the key the request carries (which proves only that the
// sender holds that key), lists it as a pending pair request, and answers
// 401 peer_approval_pending, retriable. Nothing is trusted until an
// operator accepts the request (AcceptPeer: GET the requester's identity
// at the endpoint it named, check that it names the same key, pin it with
// AddPeer). Pinning sends a pair request back, which a paired agent takes
// as a greeting: it wakes its outbox for the sender, so what waited goes
// at once. A pair request is not a protocol message: it is not recorded
// as seen, not shown in the message feed, needs no contract.
//
// Meanwhile the requester's outbox keeps its messages (401 counts as "the
// peer could not be reached": after the retries they wait as dead letters
// that are requeued when the peer is heard from), its tasks for that peer
// get a waiting_for_peer note in their history, and it logs one warning.
// A peer that answers TP-ID003 (it does not know this agent: it lost the
// request in a restart, or never got it) is sent the request again, at
// most once per askEvery.
//
// The pending list is memory only and bounded (maxPairRequests, each
// forgotten after pairRequestTTL without news): the requester asks again.

const (
	maxPairRequests = 64
	pairRequestTTL  = 24 * time.Hour
	askEvery        = 5 * time.Second
	// WaitingForPeer starts the history reason of a delegated task whose
	// target has not accepted this agent yet.
	WaitingForPeer = "waiting_for_peer"
)

// PairRequest is an agent that asked to pair and waits for an operator.
type PairRequest struct {
	AgentID   string `json:"agent_id" msgpack:"agent_id"`
	AgentName string `json:"agent_name,omitempty" msgpack:"agent_name,omitempty"`
	SystemID  string `json:"system_id,omitempty" msgpack:"system_id,omitempty"`
	Endpoint  string `json:"endpoint" msgpack:"endpoint"`
	PublicKey string `json:"public_key" msgpack:"public_key"`
	FirstSeen string `json:"first_seen" msgpack:"first_seen"`
	LastSeen  string `json:"last_seen" msgpack:"last_seen"`
	// Refused counts the messages refused from it while it waited.
	Refused int `json:"refused" msgpack:"refused"`
}

type pairRequest struct {
	id          wire.Identity
	first, last time.Time
	refused     int
}

// Pairing is the network's peer book: the paired peers (peers.go) and
// their TLS pins (tlspin.go), what they declare (peer_caps.go), the
// heartbeats that keep their status, the pending requests of others to
// pair with this agent, and the refusals this agent got from peers that
// have not accepted it (above). Network.Pairing returns it. It sends
// through the network (its transport, its signing key, its outbox's
// wake-ups) and runs its goroutines there.
type Pairing struct {
	n     *Network
	a     *agent.Agent
	log   *slog.Logger
	clock agent.Clock
	db    *store.DB // set by open

	peers peerSet
	// pins are the TLS certificates pinned at pairing, by endpoint
	// (tlspin.go).
	pins pins.Table

	// mu guards the pair requests below.
	mu      sync.Mutex
	pending map[string]*pairRequest
	// refusals holds, per peer that refused this agent, why.
	refusals map[string]string
	// asked is when this agent last sent each peer its pair request;
	// asking is closed when the request sent on pairing is answered.
	asked  map[string]time.Time
	asking map[string]chan struct{}
}

func newPairing(n *Network) *Pairing {
	return &Pairing{n: n, a: n.a, log: n.log, clock: n.clock,
		pending: map[string]*pairRequest{}, refusals: map[string]string{},
		asked: map[string]time.Time{}, asking: map[string]chan struct{}{}}
}

// open loads the paired peers from db (the network's Open).
func (pg *Pairing) open(db *store.DB) error {
	pg.db = db
	if err := pg.peers.load(db); err != nil {
		return fmt.Errorf("load peers: %w", err)
	}
	pg.setPins(pg.peers.m)
	return nil
}

// ask sends peer this agent's pair request, unless it was sent less than
// askEvery ago and force is false.
func (pg *Pairing) ask(peer string, force bool) {
	now := pg.clock.Now()
	pg.mu.Lock()
	if last, ok := pg.asked[peer]; ok && !force && now.Sub(last) < askEvery && now.After(last) {
		pg.mu.Unlock()
		return
	}
	pg.asked[peer] = now
	pg.mu.Unlock()
	p := pg.peers.get(peer)
	if p == nil {
		return
	}
	id := pg.a.Identity()
	payload, err := wire.NewJSONPayload(&id)
	if err != nil {
		return
	}
	m, err := pg.n.envelope(wire.MsgPairRequest, peer, "", "", payload)
	if err != nil {
		pg.log.Error("pair request", "peer", peer, "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(pg.n.ctx, maxHeartbeatTimeout)
	defer cancel()
	o := pg.n.sendEnvelope(ctx, p.rec.Endpoint, m)
	switch {
	case o.Delivered():
		pg.log.Debug("pair request: the peer has paired this agent", "peer", peer)
	case o.Status == 0:
		pg.log.Debug("pair request not delivered", "peer", peer, "err", o.Err)
	default:
		pg.log.Debug("pair request answered", "peer", peer, "err", o.Err)
	}
}

// pairedHello answers a pair request from a paired peer: it knows us
// already, or has just accepted us; what waits for it goes now.
func (pg *Pairing) pairedHello(p *peer, m *wire.UnifiedSynapseMessage) *Reply {
	peer := p.rec.AgentID
	pg.heard(peer, nil)
	pg.acceptedBy(peer)
	pg.n.spawn(func() { pg.n.out.Wake(peer) })
	return &Reply{Accepted: &Accepted{Accepted: true, MessageID: m.MessageID}}
}

// pinned is called when AddPeer has pinned peer: its pair request, if
// any, is settled, and this agent's request goes to it (which, if it has
// paired this agent, wakes its outbox).
func (pg *Pairing) pinned(peer string) {
	done := make(chan struct{})
	pg.mu.Lock()
	delete(pg.pending, peer)
	pg.asking[peer] = done
	pg.mu.Unlock()
	pg.n.spawn(func() {
		pg.ask(peer, true)
		close(done)
		pg.mu.Lock()
		if pg.asking[peer] == done {
			delete(pg.asking, peer)
		}
		pg.mu.Unlock()
	})
}

// Pair is AddPeer that returns once the pair request has been answered
// (or has failed, within a few seconds): an operator of the other agent
// finds it listed as soon as the call returns. The API and the CLI pair
// through it. o.TLSFingerprint pins the endpoint's TLS certificate
// (tlspin.go).
func (pg *Pairing) Pair(ctx context.Context, endpoint string, o PairOptions) (*PeerInfo, bool, error) {
	info, created, err := pg.AddPeerWith(ctx, endpoint, o)
	if err != nil || !pg.n.ready() {
		return info, created, err
	}
	pg.mu.Lock()
	done := pg.asking[info.AgentID]
	pg.mu.Unlock()
	if done != nil {
		t := time.NewTimer(2 * maxHeartbeatTimeout)
		defer t.Stop()
		select {
		case <-done:
		case <-ctx.Done():
		case <-t.C:
		}
	}
	return info, created, nil
}

// unpaired answers a message from an agent that is not a paired peer: a
// valid pair request is listed for an operator and refused as retriable
// (peer_approval_pending), as is anything else from an agent whose request
// waits; the rest is TP-ID003.
func (pg *Pairing) unpaired(m *wire.UnifiedSynapseMessage) error {
	sender := m.Sender.AgentID
	now := pg.clock.Now()
	waiting := func() error {
		return wire.Errorf(wire.CodePeerApprovalPending,
			"agent %s has not accepted %s as a peer yet: an operator there runs 'synapse peer accept %s'", pg.a.Identity().AgentID, sender, sender).
			With("sender", sender)
	}
	if m.MessageType != wire.MsgPairRequest {
		pg.mu.Lock()
		r := pg.pending[sender]
		if r != nil && now.Sub(r.last) < pairRequestTTL {
			r.refused++
			pg.mu.Unlock()
			return waiting()
		}
		pg.mu.Unlock()
		return wire.Errorf(wire.CodeIDUnknownSender, "sender %q is not a paired peer of %s: pair it there (synapse peer add ENDPOINT), or pair this agent from it so that it asks",
			sender, pg.a.Identity().AgentID).With("sender", sender)
	}
	var id wire.Identity
	if err := m.Payload.Decode(&id); err != nil {
		return badPayload(m.MessageType, err)
	}
	if id.AgentID != sender {
		return wire.Errorf(wire.CodeIDUnknownSender, "the pair request of %q carries the identity of %q", sender, id.AgentID).With("sender", sender)
	}
	if err := agentid.Check(id.AgentID); err != nil {
		return wire.Errorf(wire.CodeInvalidParams, "pair request: %v", err)
	}
	if id.AgentID == pg.a.Identity().AgentID {
		return wire.Errorf(wire.CodeInvalidParams, "pair request: the sender is this agent itself")
	}
	pub, err := agentid.DecodePublicKey(id.PublicKey)
	if err != nil {
		return wire.Errorf(wire.CodeInvalidParams, "pair request: %v", err)
	}
	if err := wire.Verify(m, pub); err != nil {
		return wire.Errorf(wire.CodeIDUnknownSender, "pair request: %v", err).With("sender", sender)
	}
	if err := wire.CheckTimestamp(m, now, wire.ReplayWindow); err != nil {
		return wire.Errorf(wire.CodeIDStaleTimestamp, "pair request: %v", err).With("sender", sender)
	}
	if id.Endpoint == "" {
		id.Endpoint = m.Sender.Endpoint
	}
	if id.Endpoint, err = agentid.CheckEndpoint(id.Endpoint); err != nil {
		return wire.Errorf(wire.CodeInvalidParams, "pair request: the sender names no usable endpoint: %v", err)
	}
	pg.mu.Lock()
	for k, r := range pg.pending {
		if now.Sub(r.last) >= pairRequestTTL {
			delete(pg.pending, k)
		}
	}
	r := pg.pending[sender]
	switch {
	case r == nil && len(pg.pending) >= maxPairRequests:
		pg.mu.Unlock()
		return wire.Errorf(wire.CodeSysOverloaded, "%d pair requests already wait for an operator here", maxPairRequests)
	case r == nil || r.id.PublicKey != id.PublicKey:
		pg.pending[sender] = &pairRequest{id: id, first: now, last: now}
		pg.mu.Unlock()
		pg.log.Warn("an agent asks to pair; accept it with 'synapse peer accept ID' (or decline it)",
			"agent_id", sender, "endpoint", id.Endpoint, "key", keyFingerprint(id.PublicKey), "again", r != nil)
	default:
		r.id, r.last = id, now
		r.refused++
		pg.mu.Unlock()
	}
	return waiting()
}

// PairRequests lists the agents that asked to pair, by agent_id.
func (pg *Pairing) PairRequests() []PairRequest {
	if !pg.n.ready() {
		return []PairRequest{}
	}
	now := pg.clock.Now()
	pg.mu.Lock()
	out := make([]PairRequest, 0, len(pg.pending))
	for _, r := range pg.pending {
		if now.Sub(r.last) >= pairRequestTTL || pg.peers.get(r.id.AgentID) != nil {
			continue
		}
		out = append(out, PairRequest{AgentID: r.id.AgentID, AgentName: r.id.AgentName, SystemID: r.id.SystemID,
			Endpoint: r.id.Endpoint, PublicKey: r.id.PublicKey, FirstSeen: wire.FormatTime(r.first),
			LastSeen: wire.FormatTime(r.last), Refused: r.refused})
	}
	pg.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].AgentID < out[j].AgentID })
	return out
}

func errNoPairRequest(id string) error {
	return wire.Errorf(wire.CodeNotFound, "no pending pair request from %q (synapse peer pending lists them)", id).With("agent_id", id)
}

// AcceptPeer pairs an agent that asked to: it reads the identity at the
// endpoint the request named, checks that it is the agent and key that
// asked, pins it (AddPeer) and greets it so that its queued messages
// come at once. o.TLSFingerprint pins the TLS certificate of its https
// endpoint, which the identity is read under already.
func (pg *Pairing) AcceptPeer(ctx context.Context, id string, o PairOptions) (*PeerInfo, error) {
	if !pg.n.ready() {
		return nil, wire.Errorf(wire.CodeAgentNotReady, "")
	}
	pg.mu.Lock()
	r := pg.pending[id]
	var want wire.Identity
	if r != nil {
		want = r.id
	}
	pg.mu.Unlock()
	if r == nil || pg.peers.get(id) != nil {
		return nil, errNoPairRequest(id)
	}
	o, err := o.check(want.Endpoint)
	if err != nil {
		return nil, err
	}
	got, err := pg.fetchIdentity(ctx, want.Endpoint, o.TLSFingerprint)
	if err != nil {
		return nil, err
	}
	if got.AgentID != want.AgentID || got.PublicKey != want.PublicKey {
		return nil, wire.Errorf(wire.CodeInvalidStateChange,
			"%s%s names %s with key %s, not the %s with key %s that asked to pair; decline the request",
			want.Endpoint, IdentityPath, got.AgentID, keyFingerprint(got.PublicKey), want.AgentID, keyFingerprint(want.PublicKey)).
			With("agent_id", id).With("reason", "public_key_changed")
	}
	info, _, err := pg.Pair(ctx, want.Endpoint, o)
	if err != nil {
		return nil, err
	}
	if info.PublicKey != want.PublicKey {
		// The key changed between the two reads: do not keep it.
		_ = pg.RemovePeer(ctx, info.AgentID)
		return nil, wire.Errorf(wire.CodeInvalidStateChange, "the key of %s changed while it was accepted; try again", id).
			With("agent_id", id).With("reason", "public_key_changed")
	}
	pg.mu.Lock()
	delete(pg.pending, id)
	pg.mu.Unlock()
	pg.log.Info("pair request accepted", "agent_id", id, "endpoint", want.Endpoint)
	return info, nil
}

// DeclinePeer forgets a pending pair request; the agent's next request
// is listed again.
func (pg *Pairing) DeclinePeer(id string) error {
	if !pg.n.ready() {
		return errNoPairRequest(id)
	}
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if _, ok := pg.pending[id]; !ok {
		return errNoPairRequest(id)
	}
	delete(pg.pending, id)
	pg.log.Info("pair request declined", "agent_id", id)
	return nil
}

// acceptedBy records that peer took a message: a refusal noted before is
// over.
func (pg *Pairing) acceptedBy(peer string) {
	pg.mu.Lock()
	_, was := pg.refusals[peer]
	if was {
		delete(pg.refusals, peer)
	}
	pg.mu.Unlock()
	if was {
		pg.log.Info("peer accepts this agent's messages now", "peer", peer)
	}
}

// refusedBy records that peer refused a message with the TPError code. A
// peer that does not know this agent (TP-ID003) or has not accepted it yet
// is noted: one warning, and a waiting_for_peer note on the tasks waiting
// for it; one that does not know it is sent the pair request again. Other
// refusals change nothing.
func (pg *Pairing) refusedBy(peer string, code wire.ErrorCode) {
	if code != wire.CodeIDUnknownSender && code != wire.CodePeerApprovalPending {
		return
	}
	why := WaitingForPeer + ": " + peer + " has not accepted this agent as a peer yet (there: synapse peer accept " + pg.a.Identity().AgentID + ")"
	if code == wire.CodeIDUnknownSender {
		why = WaitingForPeer + ": " + peer + " does not know this agent (there: synapse peer add " + pg.a.Identity().Endpoint + ")"
	}
	pg.mu.Lock()
	prev := pg.refusals[peer]
	pg.refusals[peer] = why
	pg.mu.Unlock()
	if prev != why {
		pg.log.Warn("a peer refuses this agent's messages; they wait in the outbox", "peer", peer, "code", code, "reason", why)
	}
	pg.a.NoteWaiting(peer, why)
	if code == wire.CodeIDUnknownSender {
		pg.n.spawn(func() { pg.ask(peer, false) })
	}
}

// Refusal is why peer refuses this agent, or "".
func (pg *Pairing) Refusal(peer string) string {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	return pg.refusals[peer]
}

// keyFingerprint is "SHA256:" and the unpadded base64 of the SHA-256 of a
// base64 public key (OpenSSH's form, as the CLI prints it).
func keyFingerprint(pub string) string {
	key, err := base64.StdEncoding.DecodeString(pub)
	if err != nil {
		return "?"
	}
	sum := sha256.Sum256(key)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
}
