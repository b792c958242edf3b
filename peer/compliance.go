package peer

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/wire"
)

// complianceTimeout bounds the fetch of a peer's interface list.
const complianceTimeout = 5 * time.Second

// Compliance evaluates an agent against the standard interfaces (seed 000
// §5.4): this agent for SelfID (or its own id), or a paired peer, whose
// GET /capabilities/interfaces is fetched. A peer that cannot be reached
// or answers badly is peer_unreachable (502).
func (pg *Pairing) Compliance(ctx context.Context, agentID string) (*wire.ComplianceEvaluation, error) {
	if agentID == agent.SelfID || agentID == pg.a.Identity().AgentID {
		ev := wire.EvaluateCompliance(pg.a.Identity().AgentID, pg.a.GetSupportedInterfaces())
		return &ev, nil
	}
	if !pg.n.ready() {
		return nil, wire.Errorf(wire.CodeAgentNotReady, "")
	}
	p := pg.peers.get(agentID)
	if p == nil {
		return nil, errNoPeer(agentID)
	}
	list, err := pg.fetchInterfaces(ctx, p.rec.Endpoint)
	if err != nil {
		return nil, wire.Errorf(wire.CodePeerUnreachable, "peer %s at %s: %v", agentID, p.rec.Endpoint, err).
			With("agent_id", agentID).With("endpoint", p.rec.Endpoint)
	}
	if list.AgentID != agentID {
		return nil, wire.Errorf(wire.CodePeerUnreachable, "peer %s at %s: the interface list is of agent %q",
			agentID, p.rec.Endpoint, list.AgentID).With("agent_id", agentID).With("endpoint", p.rec.Endpoint)
	}
	ev := wire.EvaluateCompliance(agentID, list.Interfaces)
	return &ev, nil
}

// fetchInterfaces reads GET {endpoint}/capabilities/interfaces.
func (pg *Pairing) fetchInterfaces(ctx context.Context, endpoint string) (*wire.InterfaceList, error) {
	ctx, cancel := context.WithTimeout(ctx, complianceTimeout)
	defer cancel()
	o := pg.fetch(ctx, endpoint+agent.InterfacesPath, maxAnswerBytes)
	if o.Status == 0 {
		return nil, fmt.Errorf("GET %s: %w", agent.InterfacesPath, o.Err)
	}
	if o.Status != 200 {
		return nil, fmt.Errorf("GET %s answered %d", agent.InterfacesPath, o.Status)
	}
	var list wire.InterfaceList
	if err := json.Unmarshal(o.Reply, &list); err != nil {
		return nil, fmt.Errorf("%s is not an interface list: %w", agent.InterfacesPath, err)
	}
	return &list, nil
}
