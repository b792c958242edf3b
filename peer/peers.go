package peer

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/synapse-edge/synapse/internal/agentid"
	"github.com/synapse-edge/synapse/peer/peerdb"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// Peer statuses.
const (
	PeerOnline  = "online"
	PeerOffline = "offline"
	PeerBusy    = "busy"
)

// IdentityPath is the path of the public identity document.
const IdentityPath = wire.APIPrefix + "/identity"

// PeerInfo is a paired peer as the API shows it.
type PeerInfo struct {
	AgentID   string `json:"agent_id" msgpack:"agent_id"`
	AgentName string `json:"agent_name,omitempty" msgpack:"agent_name,omitempty"`
	SystemID  string `json:"system_id,omitempty" msgpack:"system_id,omitempty"`
	Endpoint  string `json:"endpoint" msgpack:"endpoint"`
	PublicKey string `json:"public_key" msgpack:"public_key"`
	// TLSFingerprint is the SHA-256 of the TLS certificate pinned at
	// pairing (tlspin.go), if any.
	TLSFingerprint string `json:"tls_fingerprint,omitempty" msgpack:"tls_fingerprint,omitempty"`
	// Status is online, offline or busy.
	Status   string `json:"status" msgpack:"status"`
	LastSeen string `json:"last_seen,omitempty" msgpack:"last_seen,omitempty"`
	AddedAt  string `json:"added_at" msgpack:"added_at"`
	// ActiveTasks and MaxTasks are from the peer's last heartbeat.
	ActiveTasks int `json:"active_tasks" msgpack:"active_tasks"`
	MaxTasks    int `json:"max_tasks" msgpack:"max_tasks"`
	// Capabilities are the task types the peer declares, as seed 003
	// §4.3's AgentInfo lists them; empty until read (peer/agents).
	Capabilities []string `json:"capabilities" msgpack:"capabilities"`
	// What the peer declares, learnt at pairing (peer_caps.go); absent
	// until read.
	AgentCapabilities *wire.AgentCapabilities     `json:"agent_capabilities,omitempty" msgpack:"agent_capabilities,omitempty"`
	Interfaces        []wire.ImplementedInterface `json:"interfaces,omitempty" msgpack:"interfaces,omitempty"`
	Compliance        *wire.ComplianceEvaluation  `json:"compliance,omitempty" msgpack:"compliance,omitempty"`
	CapabilitiesAt    string                      `json:"capabilities_at,omitempty" msgpack:"capabilities_at,omitempty"`
}

// peer is the live state of one paired agent.
type peer struct {
	rec         peerdb.Peer
	pub         ed25519.PublicKey
	active, max int
}

func (p *peer) info() PeerInfo {
	pi := PeerInfo{AgentID: p.rec.AgentID, AgentName: p.rec.AgentName, SystemID: p.rec.SystemID,
		Endpoint: p.rec.Endpoint, PublicKey: p.rec.PublicKey, TLSFingerprint: p.rec.TLSFingerprint, Status: p.rec.Status,
		AddedAt: wire.FormatTime(p.rec.AddedAt), ActiveTasks: p.active, MaxTasks: p.max, Capabilities: []string{}}
	learnt(&pi, &p.rec)
	if !p.rec.LastSeen.IsZero() {
		pi.LastSeen = wire.FormatTime(p.rec.LastSeen)
	}
	return pi
}

// peerSet holds the peers in memory; the store has the same records.
type peerSet struct {
	mu sync.RWMutex
	m  map[string]*peer
}

func (ps *peerSet) load(db *store.DB) error {
	ps.m = map[string]*peer{}
	return db.View(func(tx *store.Tx) error {
		list, err := peerdb.List(tx)
		for _, r := range list {
			pub, kerr := agentid.DecodePublicKey(r.PublicKey)
			if kerr != nil {
				return fmt.Errorf("peer %s: %w", r.AgentID, kerr)
			}
			ps.m[r.AgentID] = &peer{rec: *r, pub: pub}
		}
		return err
	})
}

// get returns a copy of a peer, or nil.
func (ps *peerSet) get(id string) *peer {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	p, ok := ps.m[id]
	if !ok {
		return nil
	}
	c := *p
	return &c
}

// list returns copies of every peer, by agent_id.
func (ps *peerSet) list() []peer {
	ps.mu.RLock()
	out := make([]peer, 0, len(ps.m))
	for _, p := range ps.m {
		out = append(out, *p)
	}
	ps.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].rec.AgentID < out[j].rec.AgentID })
	return out
}

func (ps *peerSet) len() int {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return len(ps.m)
}

// AddPeer pairs the agent at endpoint: it fetches GET {endpoint}/identity
// and pins the agent_id and public key it names. Pairing an agent again
// with the same key refreshes its endpoint and names (created is false);
// an agent_id or endpoint already pinned with another key is refused
// (409): remove the peer first to re-pin it.
func (pg *Pairing) AddPeer(ctx context.Context, endpoint string) (info *PeerInfo, created bool, err error) {
	return pg.AddPeerWith(ctx, endpoint, PairOptions{})
}

// AddPeerWith is AddPeer with options: o.TLSFingerprint pins the https
// endpoint's certificate (the identity is read under it already), or
// re-pins a peer paired before; without it a peer keeps its pin.
func (pg *Pairing) AddPeerWith(ctx context.Context, endpoint string, o PairOptions) (info *PeerInfo, created bool, err error) {
	endpoint, err = agentid.CheckEndpoint(endpoint)
	if err != nil {
		return nil, false, err
	}
	if o, err = o.check(endpoint); err != nil {
		return nil, false, err
	}
	id, err := pg.fetchIdentity(ctx, endpoint, o.TLSFingerprint)
	if err != nil {
		return nil, false, err
	}
	if err := agentid.Check(id.AgentID); err != nil {
		return nil, false, wire.Errorf(wire.CodeInvalidParams, "%s/identity: %v", endpoint, err)
	}
	if id.AgentID == pg.a.Identity().AgentID {
		return nil, false, wire.Errorf(wire.CodeInvalidParams, "%s is this agent itself", endpoint).With("field", "endpoint")
	}
	pub, err := agentid.DecodePublicKey(id.PublicKey)
	if err != nil {
		return nil, false, wire.Errorf(wire.CodeInvalidParams, "%s/identity: %v", endpoint, err)
	}
	now := pg.clock.Now().UTC()
	ps := &pg.peers
	ps.mu.Lock()
	defer ps.mu.Unlock()
	old := ps.m[id.AgentID]
	if old != nil && old.rec.PublicKey != id.PublicKey {
		return nil, false, wire.Errorf(wire.CodeInvalidStateChange,
			"peer %s is pinned with another public key; remove it (DELETE /agents/%s) to pin the new one", id.AgentID, id.AgentID).
			With("agent_id", id.AgentID).With("reason", "public_key_changed")
	}
	for _, p := range ps.m {
		if p.rec.Endpoint == endpoint && p.rec.AgentID != id.AgentID {
			return nil, false, wire.Errorf(wire.CodeInvalidStateChange,
				"%s is paired as %s with another key; remove that peer first to pin %s", endpoint, p.rec.AgentID, id.AgentID).
				With("agent_id", p.rec.AgentID).With("reason", "public_key_changed")
		}
	}
	rec := peerdb.Peer{AgentID: id.AgentID, AgentName: id.AgentName, SystemID: id.SystemID, Endpoint: endpoint,
		PublicKey: id.PublicKey, Status: PeerOnline, LastSeen: now, AddedAt: now, TLSFingerprint: o.TLSFingerprint}
	p := &peer{rec: rec, pub: pub}
	if old != nil {
		p.rec.AddedAt, p.active, p.max = old.rec.AddedAt, old.active, old.max
		if p.rec.TLSFingerprint == "" && old.rec.Endpoint == endpoint {
			p.rec.TLSFingerprint = old.rec.TLSFingerprint
		}
	}
	repinned := old != nil && old.rec.TLSFingerprint != "" && old.rec.TLSFingerprint != p.rec.TLSFingerprint
	if err := pg.db.Update(ctx, func(tx *store.Tx) error { return peerdb.Put(tx, &p.rec) }); err != nil {
		return nil, false, wire.Errorf(wire.CodeSysStorage, "store peer: %v", err)
	}
	ps.m[id.AgentID] = p
	pg.setPins(ps.m)
	pi := p.info()
	pg.log.Info("peer paired", "agent_id", id.AgentID, "endpoint", endpoint, "again", old != nil,
		"tls_fingerprint", p.rec.TLSFingerprint, "repinned", repinned)
	// Messages that waited for this peer (or gave up) go now.
	pg.n.spawn(func() { pg.n.out.Wake(id.AgentID) })
	pg.pinned(id.AgentID) // pairing.go
	pg.n.spawn(func() { pg.learnCapabilities(id.AgentID) })
	return &pi, old == nil, nil
}

// fetchIdentity reads a peer's identity document under a TLS pin ("":
// the pin of a peer paired at endpoint, if any).
func (pg *Pairing) fetchIdentity(ctx context.Context, endpoint, pin string) (*wire.Identity, error) {
	ctx, cancel := context.WithTimeout(ctx, identityTimeout)
	defer cancel()
	unreachable := func(format string, args ...any) error {
		return wire.Errorf(wire.CodeCallbackUndeliverable, "pair %s: "+format, append([]any{endpoint}, args...)...).With("endpoint", endpoint)
	}
	o := pg.fetchPinned(ctx, endpoint+IdentityPath, maxAnswerBytes, pin)
	switch {
	case o.Status == 0 && o.Class == transport.Permanent: // not a URL the transport can send to
		return nil, wire.Errorf(wire.CodeInvalidParams, "endpoint: %v", o.Err).With("field", "endpoint")
	case o.Status == 0:
		return nil, unreachable("GET %s: %v", IdentityPath, o.Err)
	case o.Status != 200:
		return nil, unreachable("GET %s answered %d", IdentityPath, o.Status)
	}
	var id wire.Identity
	if err := json.Unmarshal(o.Reply, &id); err != nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "%s%s is not an identity document: %v", endpoint, IdentityPath, err)
	}
	return &id, nil
}

// fetch reads the JSON document at url, at most max bytes of it.
func (pg *Pairing) fetch(ctx context.Context, url string, max int) transport.Outcome {
	return pg.fetchPinned(ctx, url, max, "")
}

// fetchPinned is fetch under the TLS pin given ("": the pin of the peer
// at url, if any).
func (pg *Pairing) fetchPinned(ctx context.Context, url string, max int, pin string) transport.Outcome {
	return pg.n.send(ctx, &transport.Message{Kind: transport.Fetch, To: url,
		Header: map[string]string{"Accept": wire.ContentJSON}, MaxReply: max, TLSPin: pin})
}

// Known reports whether peer is paired.
func (pg *Pairing) Known(peer string) bool { return pg.peers.get(peer) != nil }

// pinnedKey is the public key pinned for a paired peer (the directory's
// Options.PinnedKey).
func (pg *Pairing) pinnedKey(id string) (string, bool) {
	if p := pg.peers.get(id); p != nil {
		return p.rec.PublicKey, true
	}
	return "", false
}

// Peers lists the paired peers by agent_id.
func (pg *Pairing) Peers() []PeerInfo {
	list := pg.peers.list()
	out := make([]PeerInfo, len(list))
	for i := range list {
		out[i] = list[i].info()
	}
	return out
}

// Peer describes one paired peer.
func (pg *Pairing) Peer(id string) (*PeerInfo, error) {
	p := pg.peers.get(id)
	if p == nil {
		return nil, errNoPeer(id)
	}
	pi := p.info()
	return &pi, nil
}

func errNoPeer(id string) error {
	return wire.Errorf(wire.CodeNotFound, "no paired peer %q", id).With("agent_id", id)
}

// RemovePeer unpairs a peer: its messages are refused from now on.
// Messages queued for it stay in the outbox and become dead letters; pair
// it again and retry them to send them.
func (pg *Pairing) RemovePeer(ctx context.Context, id string) error {
	ps := &pg.peers
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if _, ok := ps.m[id]; !ok {
		return errNoPeer(id)
	}
	err := pg.db.Update(ctx, func(tx *store.Tx) error { return peerdb.Delete(tx, id) })
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return wire.Errorf(wire.CodeSysStorage, "remove peer: %v", err)
	}
	delete(ps.m, id)
	pg.setPins(ps.m)
	pg.n.inbound.order.forget(id)
	pg.log.Info("peer removed", "agent_id", id)
	return nil
}

// heard records that a peer was heard from (any accepted message, a
// heartbeat it sent, or one we sent that it accepted). hb, when not nil,
// is its heartbeat. It reports whether the peer was offline.
func (pg *Pairing) heard(id string, hb *wire.HeartbeatPayload) (wasOffline bool) {
	now := pg.clock.Now().UTC()
	ps := &pg.peers
	ps.mu.Lock()
	p, ok := ps.m[id]
	if !ok {
		ps.mu.Unlock()
		return false
	}
	prev := p.rec.Status
	p.rec.LastSeen = now
	if hb != nil {
		p.active, p.max = hb.ActiveTasks, hb.MaxTasks
		p.rec.Status = PeerOnline
		if hb.Status == PeerBusy || (hb.MaxTasks > 0 && hb.ActiveTasks >= hb.MaxTasks) {
			p.rec.Status = PeerBusy
		}
	} else if prev == PeerOffline {
		p.rec.Status = PeerOnline
	}
	rec := p.rec
	ps.mu.Unlock()
	if rec.Status != prev {
		pg.log.Info("peer status", "agent_id", id, "status", rec.Status, "was", prev)
		pg.savePeer(rec)
		if prev == PeerOffline {
			pg.n.spawn(func() { pg.learnCapabilities(id) }) // it may have changed
		}
	}
	return prev == PeerOffline
}

// savePeer persists a status change without waiting; a peer removed
// meanwhile is not written back.
func (pg *Pairing) savePeer(rec peerdb.Peer) {
	pg.db.UpdateAsync(func(tx *store.Tx) error {
		if _, err := peerdb.Get(tx, rec.AgentID); err != nil {
			return nil
		}
		return peerdb.Put(tx, &rec)
	}, nil)
}

// markSilent makes offline the peers not heard from since cutoff.
func (pg *Pairing) markSilent(cutoff time.Time) {
	var changed []peerdb.Peer
	ps := &pg.peers
	ps.mu.Lock()
	for _, p := range ps.m {
		if p.rec.Status != PeerOffline && p.rec.LastSeen.Before(cutoff) {
			p.rec.Status = PeerOffline
			changed = append(changed, p.rec)
		}
	}
	ps.mu.Unlock()
	for _, rec := range changed {
		pg.log.Info("peer status", "agent_id", rec.AgentID, "status", PeerOffline, "last_seen", rec.LastSeen)
		pg.savePeer(rec)
	}
}

// heartbeats sends p2p:heartbeat to every peer every interval, directly
// (not through the outbox), and marks offline the peers silent for
// offlineAfter intervals. The first round goes at start, so peers learn at
// once that this agent is back.
func (pg *Pairing) heartbeats() {
	interval := pg.n.p2p.HeartbeatInterval()
	tick := make(chan struct{}, 1)
	for { // until close
		pg.beat(interval)
		pg.markSilent(pg.clock.Now().Add(-offlineAfter * interval))
		pg.n.hbMu.Lock()
		if pg.n.stopped {
			pg.n.hbMu.Unlock()
			return
		}
		pg.n.hbTimer = pg.clock.AfterFunc(interval, func() {
			select {
			case tick <- struct{}{}:
			default:
			}
		})
		pg.n.hbMu.Unlock()
		select {
		case <-tick:
		case <-pg.n.ctx.Done():
			return
		}
	}
}

// beat sends one heartbeat to each peer, at most 16 at a time, and waits
// for the answers.
func (pg *Pairing) beat(interval time.Duration) {
	hb := pg.heartbeat()
	payload, err := wire.NewJSONPayload(hb)
	if err != nil {
		pg.log.Error("heartbeat payload", "err", err)
		return
	}
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for _, p := range pg.peers.list() {
		sem <- struct{}{}
		wg.Add(1)
		go func(p peer) {
			defer func() { <-sem; wg.Done() }()
			ctx, cancel := context.WithTimeout(pg.n.ctx, min(interval, maxHeartbeatTimeout))
			defer cancel()
			m, err := pg.n.envelope(wire.MsgHeartbeat, p.rec.AgentID, "", "", payload)
			if err != nil {
				pg.log.Error("heartbeat", "peer", p.rec.AgentID, "err", err)
				return
			}
			if o := pg.n.sendEnvelope(ctx, p.rec.Endpoint, m); !o.Delivered() {
				pg.log.Debug("heartbeat not answered", "peer", p.rec.AgentID, "err", o.Err)
				if o.Status != 0 {
					pg.refusedBy(p.rec.AgentID, errorCode(o)) // pairing.go
				}
				return
			}
			pg.heard(p.rec.AgentID, nil)
			pg.n.out.Wake(p.rec.AgentID)
		}(p)
	}
	wg.Wait()
}

// heartbeat is this agent's p2p:heartbeat payload.
func (pg *Pairing) heartbeat() *wire.HeartbeatPayload {
	hb := &wire.HeartbeatPayload{Status: PeerOnline, MaxTasks: pg.a.Config().MaxConcurrentTasks} // a reload may change it
	hb.ActiveTasks = pg.a.ActiveTasks()
	if hb.ActiveTasks >= hb.MaxTasks {
		hb.Status = PeerBusy
	}
	return hb
}
