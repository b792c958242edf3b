package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

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
// before; the failure is logged, never fatal to pairing.

// Paths of the peer documents read.
const (
	capabilitiesPath = "/api/v1/synapse/capabilities"
	interfacesPath   = "/api/v1/synapse/capabilities/interfaces"
	// maxCapsBytes bounds one document (task types carry JSON schemas).
	maxCapsBytes = 1 << 20
)

// learnCapabilities reads and stores peerID's capabilities and
// interfaces.
func (n *p2pNode) learnCapabilities(peerID string) {
	p := n.peers.get(peerID)
	if p == nil {
		return
	}
	ctx, cancel := context.WithTimeout(n.ctx, identityTimeout)
	defer cancel()
	var caps wire.AgentCapabilities
	var ifs struct {
		AgentID    string                      `json:"agent_id"`
		Interfaces []wire.ImplementedInterface `json:"interfaces"`
	}
	if err := n.getJSON(ctx, p.rec.Endpoint+capabilitiesPath, &caps); err != nil {
		n.log.Warn("read the peer's capabilities", "peer", peerID, "err", err)
		return
	}
	if err := n.getJSON(ctx, p.rec.Endpoint+interfacesPath, &ifs); err != nil {
		n.log.Warn("read the peer's interfaces", "peer", peerID, "err", err)
		return
	}
	if caps.AgentID != peerID || (ifs.AgentID != "" && ifs.AgentID != peerID) {
		n.log.Warn("the peer's capabilities name another agent", "peer", peerID, "capabilities_of", caps.AgentID, "interfaces_of", ifs.AgentID)
		return
	}
	now := n.a.clock.Now().UTC()
	ps := &n.peers
	ps.mu.Lock()
	cur, ok := ps.m[peerID]
	if !ok || cur.rec.Endpoint != p.rec.Endpoint {
		ps.mu.Unlock()
		return // removed or re-paired meanwhile
	}
	cur.rec.Capabilities, cur.rec.Interfaces, cur.rec.CapabilitiesAt = &caps, ifs.Interfaces, now
	rec := cur.rec
	ps.mu.Unlock()
	if err := n.a.db.Update(ctx, func(tx *store.Tx) error {
		if _, err := tx.Peer(peerID); err != nil {
			return nil
		}
		return tx.PutPeer(&rec)
	}); err != nil {
		n.log.Warn("store the peer's capabilities", "peer", peerID, "err", err)
		return
	}
	n.log.Info("peer capabilities learnt", "peer", peerID, "task_types", len(caps.SupportedTaskTypes), "interfaces", len(ifs.Interfaces))
}

// getJSON reads a public JSON document into v.
func (n *p2pNode) getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", wire.ContentJSON)
	resp, err := n.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s answered %d", url, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCapsBytes+1))
	if err != nil {
		return err
	}
	if len(body) > maxCapsBytes {
		return fmt.Errorf("GET %s: more than %d bytes", url, maxCapsBytes)
	}
	return json.Unmarshal(body, v)
}

// learnt adds rec's learnt documents to pi.
func learnt(pi *PeerInfo, rec *store.Peer) {
	if rec.Capabilities == nil {
		return
	}
	ce := wire.EvaluateCompliance(rec.AgentID, rec.Interfaces)
	pi.Capabilities, pi.Interfaces, pi.Compliance = rec.Capabilities, rec.Interfaces, &ce
	pi.CapabilitiesAt = wire.FormatTime(rec.CapabilitiesAt)
}
