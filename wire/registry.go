package wire

// Discovery (seed 000 §6.4). An agent registers with a registry agent by
// posting a signed envelope of type MsgRegistryRegister whose payload is a
// Registration; it posts it again every heartbeat interval and whenever its
// capabilities change. The registry verifies the signature with the public
// key the registration carries, pins that key to the agent_id on the first
// registration, and refuses an agent that lacks a basic interface.

// MsgRegistryRegister is the message type of a registration.
const MsgRegistryRegister = "registry:register"

// Registration is the payload of a MsgRegistryRegister envelope: who the
// agent is, what it can do and which standard interfaces it implements.
type Registration struct {
	Identity     Identity               `json:"identity" msgpack:"identity"`
	Capabilities *AgentCapabilities     `json:"capabilities" msgpack:"capabilities"`
	Interfaces   []ImplementedInterface `json:"interfaces" msgpack:"interfaces"`
	// HeartbeatIntervalSeconds is how often the agent re-registers; the
	// registry shows it offline after three intervals without one.
	HeartbeatIntervalSeconds int `json:"heartbeat_interval_seconds" msgpack:"heartbeat_interval_seconds"`
	// Status is online or busy, with the task counts of p2p:heartbeat.
	Status      string `json:"status,omitempty" msgpack:"status,omitempty"`
	ActiveTasks int    `json:"active_tasks" msgpack:"active_tasks"`
	MaxTasks    int    `json:"max_tasks" msgpack:"max_tasks"`
}
