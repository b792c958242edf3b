// Package agents answers the questions a client asks about agents (seed
// 003 §2.3, §4.3): ListAgents and QueryAgent, one answer for REST (GET
// /agents, GET /agents/{agent_id}) and gRPC (CapabilitiesService), which
// only encode it. It reads the peer network (peer.Network).
package agents

import (
	"encoding/json"

	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/registry"
	"github.com/synapse-edge/synapse/wire"
)

// Network is what the answers are read from: the network's peer book
// and its directory; *peer.Network implements it.
type Network interface {
	Pairing() *peer.Pairing
	Directory() *registry.Directory
}

var _ Network = (*peer.Network)(nil)

// AgentList is ListAgents' answer, seed 003's ListAgentsResponse: each
// agent's capabilities are the task types it declares (a list of
// strings), its full declaration is agent_capabilities.
type AgentList struct {
	Agents []peer.PeerInfo `json:"agents" msgpack:"agents"`
	Total  int             `json:"total" msgpack:"total"`
}

// AgentDescription is QueryAgent's answer: seed 003's CapabilitiesResponse
// and, for a paired peer, its record beside it (endpoint, public_key,
// status, ...), the fields GET /agents/{agent_id} answered before.
type AgentDescription struct {
	AgentID               string   `json:"agent_id" msgpack:"agent_id"`
	AgentName             string   `json:"agent_name" msgpack:"agent_name"`
	ProtocolVersion       string   `json:"protocol_version" msgpack:"protocol_version"`
	SupportedTaskTypes    []string `json:"supported_task_types" msgpack:"supported_task_types"`
	SupportedContentTypes []string `json:"supported_content_types" msgpack:"supported_content_types"`
	MaxFileSize           int64    `json:"max_file_size" msgpack:"max_file_size"`
	MaxConcurrentTasks    int      `json:"max_concurrent_tasks" msgpack:"max_concurrent_tasks"`
	SupportStreaming      bool     `json:"support_streaming" msgpack:"support_streaming"`
	SupportHiL            bool     `json:"support_hil" msgpack:"support_hil"`
	SupportGroups         bool     `json:"support_groups" msgpack:"support_groups"`
	SystemID              string   `json:"system_id" msgpack:"system_id"`
	// CapabilitiesJSON is AgentCapabilities as JSON text, as gRPC carries
	// it; empty when the agent's declaration is not known.
	CapabilitiesJSON  string                  `json:"capabilities_json,omitempty" msgpack:"capabilities_json,omitempty"`
	AgentCapabilities *wire.AgentCapabilities `json:"agent_capabilities,omitempty" msgpack:"agent_capabilities,omitempty"`

	// The paired peer's record; empty for this agent and for one known
	// only from the directory.
	Endpoint       string                      `json:"endpoint,omitempty" msgpack:"endpoint,omitempty"`
	PublicKey      string                      `json:"public_key,omitempty" msgpack:"public_key,omitempty"`
	TLSFingerprint string                      `json:"tls_fingerprint,omitempty" msgpack:"tls_fingerprint,omitempty"`
	Status         string                      `json:"status,omitempty" msgpack:"status,omitempty"`
	LastSeen       string                      `json:"last_seen,omitempty" msgpack:"last_seen,omitempty"`
	AddedAt        string                      `json:"added_at,omitempty" msgpack:"added_at,omitempty"`
	ActiveTasks    int                         `json:"active_tasks,omitempty" msgpack:"active_tasks,omitempty"`
	MaxTasks       int                         `json:"max_tasks,omitempty" msgpack:"max_tasks,omitempty"`
	Interfaces     []wire.ImplementedInterface `json:"interfaces,omitempty" msgpack:"interfaces,omitempty"`
	Compliance     *wire.ComplianceEvaluation  `json:"compliance,omitempty" msgpack:"compliance,omitempty"`
	CapabilitiesAt string                      `json:"capabilities_at,omitempty" msgpack:"capabilities_at,omitempty"`
}

// List is ListAgents: the paired peers with the task types each
// declares, learnt at pairing, else from its registration in this agent's
// directory.
func List(n Network) AgentList {
	peers := n.Pairing().Peers()
	for i := range peers {
		p := &peers[i]
		if p.AgentCapabilities == nil {
			if e, err := n.Directory().Registration(p.AgentID); err == nil && e.AgentCapabilities != nil {
				p.Capabilities = e.Capabilities
			}
		}
	}
	return AgentList{Agents: peers, Total: len(peers)}
}

// Query is QueryAgent: it describes the agent id — this agent (self, its
// capabilities now), a paired peer (what pairing learnt of it, else its
// registration, else its record alone) or an agent of the directory (the
// capabilities it registered). NotFound otherwise.
func Query(n Network, self *wire.AgentCapabilities, id string) (*AgentDescription, error) {
	if id == "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, "agent_id is required").With("field", "agent_id")
	}
	if self != nil && id == self.AgentID {
		return describe(self, nil), nil
	}
	p, perr := n.Pairing().Peer(id)
	var caps *wire.AgentCapabilities
	if p != nil {
		caps = p.AgentCapabilities
	}
	if caps == nil {
		if e, err := n.Directory().Registration(id); err == nil {
			caps = e.AgentCapabilities
		}
	}
	if caps == nil && p == nil {
		return nil, perr
	}
	return describe(caps, p), nil
}

// describe is the AgentDescription of caps (nil: unknown) and the peer
// record p (nil: not paired).
func describe(caps *wire.AgentCapabilities, p *peer.PeerInfo) *AgentDescription {
	d := &AgentDescription{SupportedTaskTypes: []string{}, SupportedContentTypes: []string{}}
	if caps != nil {
		d.AgentID, d.AgentName, d.SystemID, d.ProtocolVersion = caps.AgentID, caps.AgentName, caps.SystemID, caps.ProtocolVersion
		d.SupportedTaskTypes = registry.TaskTypes(caps)
		if caps.SupportedContentTypes != nil {
			d.SupportedContentTypes = caps.SupportedContentTypes
		}
		d.MaxFileSize, d.MaxConcurrentTasks = caps.MaxFileSize, caps.MaxConcurrentTasks
		d.SupportStreaming, d.SupportHiL, d.SupportGroups = caps.SupportStreaming, caps.SupportHiL, caps.SupportGroups
		d.AgentCapabilities = caps
		if b, err := json.Marshal(caps); err == nil {
			d.CapabilitiesJSON = string(b)
		}
	}
	if p == nil {
		return d
	}
	if caps == nil { // the record alone
		d.AgentID, d.AgentName, d.SystemID, d.MaxConcurrentTasks = p.AgentID, p.AgentName, p.SystemID, p.MaxTasks
	}
	d.Endpoint, d.PublicKey, d.Status, d.LastSeen, d.AddedAt = p.Endpoint, p.PublicKey, p.Status, p.LastSeen, p.AddedAt
	d.ActiveTasks, d.MaxTasks, d.TLSFingerprint = p.ActiveTasks, p.MaxTasks, p.TLSFingerprint
	d.Interfaces, d.Compliance, d.CapabilitiesAt = p.Interfaces, p.Compliance, p.CapabilitiesAt
	return d
}
