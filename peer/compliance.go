package peer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/wire"
)

// complianceTimeout bounds the fetch of a peer's interface list.
const complianceTimeout = 5 * time.Second

// provideInterfaces declares what the P2P layer implements once it has
// started: envelopes from peers (POST /message), the tasks they request,
// the results they send back (POST /callback), results sent through the
// durable outbox, and callbacks with polling as the fallback.
func (n *Network) provideInterfaces() {
	_ = n.a.ProvideInterfaces(wire.IfaceMessageHandler, wire.IfaceP2PTaskHandler, wire.IfaceCallbackReceiver,
		wire.IfaceCallbackSender, wire.IfaceHybridTransport)
}

// Compliance evaluates an agent against the standard interfaces (seed 000
// §5.4): this agent for SelfID (or its own id), or a paired peer, whose
// GET /capabilities/interfaces is fetched. A peer that cannot be reached
// or answers badly is peer_unreachable (502).
func (n *Network) Compliance(ctx context.Context, agentID string) (*wire.ComplianceEvaluation, error) {
	if agentID == agent.SelfID || agentID == n.a.Identity().AgentID {
		ev := wire.EvaluateCompliance(n.a.Identity().AgentID, n.a.GetSupportedInterfaces())
		return &ev, nil
	}
	if !n.ready() {
		return nil, wire.Errorf(wire.CodeAgentNotReady, "")
	}
	p := n.peers.get(agentID)
	if p == nil {
		return nil, errNoPeer(agentID)
	}
	list, err := n.fetchInterfaces(ctx, p.rec.Endpoint)
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
func (n *Network) fetchInterfaces(ctx context.Context, endpoint string) (*wire.InterfaceList, error) {
	ctx, cancel := context.WithTimeout(ctx, complianceTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+agent.InterfacesPath, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", wire.ContentJSON)
	resp, err := n.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", agent.InterfacesPath, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", agent.InterfacesPath, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s answered %d", agent.InterfacesPath, resp.StatusCode)
	}
	var list wire.InterfaceList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("%s is not an interface list: %w", agent.InterfacesPath, err)
	}
	return &list, nil
}
