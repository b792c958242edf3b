package peer

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/synapse-edge/synapse/peer/peerdb"
	"github.com/synapse-edge/synapse/registry"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Capabilities and interfaces learnt at pairing (seed 000 §1.4, §6.4).
//
// When a peer is paired, and again whenever it is heard from after being
// offline (it may have restarted with other handlers), this agent reads
// the peer's public GET /capabilities and GET /capabilities/interfaces
// and keeps them with the peer (GET /agents/{id} shows them with the
// compliance they give), so that deciding what to send where needs no
// extra round trip. A peer that does not answer keeps what was learnt
// before and is asked again a few times with back-off; the failure is
// logged, never fatal to pairing.

// Paths of the peer documents read.
const (
	capabilitiesPath = wire.APIPrefix + "/capabilities"
	interfacesPath   = wire.APIPrefix + "/capabilities/interfaces"
	// maxCapsBytes bounds one document (task types carry JSON schemas).
	maxCapsBytes = 1 << 20
)

// learnRetries is how many times a failed read of a peer's documents is
// tried again, after learnBackoff, then twice that, and so on: a peer
// that restarts is often heard (its first heartbeat or greeting) before
// its listener accepts.
const (
	learnRetries = 5
	learnBackoff = 500 * time.Millisecond
)

// learnCapabilities reads and stores peerID's capabilities and
// interfaces, trying again with back-off (on the agent's clock) while the
// peer does not answer.
func (pg *Pairing) learnCapabilities(peerID string) {
	wait := learnBackoff
	for try := 0; ; try++ {
		err := pg.learnCapabilitiesOnce(peerID)
		if err == nil {
			return
		}
		if try == learnRetries {
			pg.log.Warn("gave up reading the peer's capabilities until it is heard again", "peer", peerID, "err", err)
			return
		}
		pg.log.Debug("read the peer's capabilities: trying again", "peer", peerID, "in", wait, "err", err)
		fired := make(chan struct{})
		t := pg.clock.AfterFunc(wait, func() { close(fired) })
		select {
		case <-fired:
		case <-pg.n.ctx.Done():
			t.Stop()
			return
		}
		wait *= 2
	}
}

// learnCapabilitiesOnce reads and stores peerID's documents once. It
// returns an error only when the read could not be done and is worth
// trying again.
func (pg *Pairing) learnCapabilitiesOnce(peerID string) error {
	p := pg.peers.get(peerID)
	if p == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(pg.n.ctx, identityTimeout)
	defer cancel()
	var caps wire.AgentCapabilities
	var ifs struct {
		AgentID    string                      `json:"agent_id"`
		Interfaces []wire.ImplementedInterface `json:"interfaces"`
	}
	if err := pg.getJSON(ctx, p.rec.Endpoint+capabilitiesPath, &caps); err != nil {
		return fmt.Errorf("capabilities: %w", err)
	}
	if err := pg.getJSON(ctx, p.rec.Endpoint+interfacesPath, &ifs); err != nil {
		return fmt.Errorf("interfaces: %w", err)
	}
	if caps.AgentID != peerID || (ifs.AgentID != "" && ifs.AgentID != peerID) {
		pg.log.Warn("the peer's capabilities name another agent", "peer", peerID, "capabilities_of", caps.AgentID, "interfaces_of", ifs.AgentID)
		return nil
	}
	now := pg.clock.Now().UTC()
	ps := &pg.peers
	ps.mu.Lock()
	cur, ok := ps.m[peerID]
	if !ok || cur.rec.Endpoint != p.rec.Endpoint {
		ps.mu.Unlock()
		return nil // removed or re-paired meanwhile
	}
	cur.rec.Capabilities, cur.rec.Interfaces, cur.rec.CapabilitiesAt = &caps, ifs.Interfaces, now
	rec := cur.rec
	ps.mu.Unlock()
	if err := pg.db.Update(ctx, func(tx *store.Tx) error {
		if _, err := peerdb.Get(tx, peerID); err != nil {
			return nil
		}
		return peerdb.Put(tx, &rec)
	}); err != nil {
		pg.log.Warn("store the peer's capabilities", "peer", peerID, "err", err)
		return nil
	}
	pg.log.Info("peer capabilities learnt", "peer", peerID, "task_types", len(caps.SupportedTaskTypes), "interfaces", len(ifs.Interfaces))
	return nil
}

// getJSON reads a public JSON document into v.
func (pg *Pairing) getJSON(ctx context.Context, url string, v any) error {
	o := pg.fetch(ctx, url, maxCapsBytes)
	switch {
	case o.Status == 0:
		return o.Err
	case o.Status != 200:
		return fmt.Errorf("GET %s answered %d", url, o.Status)
	case o.Truncated:
		return fmt.Errorf("GET %s: more than %d bytes", url, maxCapsBytes)
	}
	return json.Unmarshal(o.Reply, v)
}

// learnt adds rec's learnt documents to pi.
func learnt(pi *PeerInfo, rec *peerdb.Peer) {
	if rec.Capabilities == nil {
		return
	}
	ce := wire.EvaluateCompliance(rec.AgentID, rec.Interfaces)
	pi.AgentCapabilities, pi.Interfaces, pi.Compliance = rec.Capabilities, rec.Interfaces, &ce
	pi.Capabilities = registry.TaskTypes(rec.Capabilities)
	pi.CapabilitiesAt = wire.FormatTime(rec.CapabilitiesAt)
}
