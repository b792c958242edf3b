package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// Capabilities is what an agent declares it can do (GET /capabilities,
// seed 000 AgentCapabilities).
type Capabilities struct {
	AgentID                 string     `json:"agent_id"`
	AgentName               string     `json:"agent_name"`
	SystemID                string     `json:"system_id"`
	ProtocolVersion         string     `json:"protocol_version"`
	SupportedTaskTypes      []TaskType `json:"supported_task_types"`
	SupportedContentTypes   []string   `json:"supported_content_types"`
	SupportedTransportModes []string   `json:"supported_transport_modes"`
	MaxFileSize             int64      `json:"max_file_size"`
	MaxConcurrentTasks      int        `json:"max_concurrent_tasks"`
	MaxTaskDurationSeconds  int        `json:"max_task_duration_seconds"`
	SupportProgressUpdates  bool       `json:"support_progress_updates"`
	SupportStreaming        bool       `json:"support_streaming"`
	SupportHiL              bool       `json:"support_hil"`
	SupportGroups           bool       `json:"support_groups"`
}

// TaskType is one task type an agent runs (seed 000 SupportedTaskType);
// the schemas are JSON Schema documents as strings.
type TaskType struct {
	Type          string   `json:"type"`
	Name          string   `json:"name"`
	Description   string   `json:"description"`
	EstimatedTime string   `json:"estimated_time"`
	InputSchema   string   `json:"input_schema,omitempty"`
	OutputSchema  string   `json:"output_schema,omitempty"`
	Capabilities  []string `json:"capabilities,omitempty"`
}

// Interface is a standard interface an agent implements.
type Interface struct {
	Name            string `json:"name"`
	Category        string `json:"category"`
	ComplianceLevel string `json:"compliance_level"`
	Version         string `json:"version"`
	Description     string `json:"description,omitempty"`
}

// InterfaceList is the answer of GET /capabilities/interfaces.
type InterfaceList struct {
	AgentID         string      `json:"agent_id"`
	ProtocolVersion string      `json:"protocol_version"`
	Interfaces      []Interface `json:"interfaces"`
}

// Compliance is an agent's evaluation against the standard interfaces
// (seed 000 ComplianceEvaluation).
type Compliance struct {
	AgentID             string   `json:"agent_id"`
	BasicImplemented    int      `json:"basic_implemented"`
	BasicRequired       int      `json:"basic_required"`
	CompleteImplemented int      `json:"complete_implemented"`
	CompleteTotal       int      `json:"complete_total"`
	AdvancedImplemented int      `json:"advanced_implemented"`
	AdvancedTotal       int      `json:"advanced_total"`
	Compliant           bool     `json:"compliant"`
	MissingBasics       []string `json:"missing_basics,omitempty"`
}

// DirectoryEntry is an agent registered with a registry agent. Status is
// online, busy or offline; times are RFC 3339 text.
type DirectoryEntry struct {
	AgentID                  string `json:"agent_id"`
	AgentName                string `json:"agent_name,omitempty"`
	SystemID                 string `json:"system_id,omitempty"`
	Endpoint                 string `json:"endpoint"`
	PublicKey                string `json:"public_key"`
	ProtocolVersion          string `json:"protocol_version,omitempty"`
	Status                   string `json:"status"`
	ActiveTasks              int    `json:"active_tasks"`
	MaxTasks                 int    `json:"max_tasks"`
	HeartbeatIntervalSeconds int    `json:"heartbeat_interval_seconds"`
	RegisteredAt             string `json:"registered_at"`
	LastSeen                 string `json:"last_seen"`
	// Capabilities are the task types the agent declares (seed 003
	// §4.3); AgentCapabilities is its whole declaration.
	Capabilities      []string      `json:"capabilities"`
	AgentCapabilities *Capabilities `json:"agent_capabilities"`
	Interfaces        []Interface   `json:"interfaces"`
	Compliance        Compliance    `json:"compliance"`
	// Source is where the agent knows the entry from: "registry"
	// (registered with it) or "mqtt" (a presence card on its broker).
	Source string `json:"source,omitempty"`
}

// UnmarshalJSON also reads the entries of agents older than seed 003's
// listing shape, whose capabilities is the whole declaration.
func (e *DirectoryEntry) UnmarshalJSON(b []byte) error {
	type plain DirectoryEntry
	var raw struct {
		plain
		Capabilities json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*e = DirectoryEntry(raw.plain)
	c := bytes.TrimSpace(raw.Capabilities)
	switch {
	case len(c) > 0 && c[0] == '{':
		if e.AgentCapabilities == nil {
			if err := json.Unmarshal(c, &e.AgentCapabilities); err != nil {
				return fmt.Errorf("capabilities: %w", err)
			}
		}
		e.Capabilities = nil
		for _, t := range e.AgentCapabilities.SupportedTaskTypes {
			e.Capabilities = append(e.Capabilities, t.Type)
		}
	case len(c) > 0:
		if err := json.Unmarshal(c, &e.Capabilities); err != nil {
			return fmt.Errorf("capabilities: %w", err)
		}
	}
	return nil
}

// DirectoryQuery selects registered agents; empty fields match all.
type DirectoryQuery struct {
	// Capability matches a task type that lists it among its
	// capabilities, or is of that type.
	Capability string
	// TaskType matches the task type.
	TaskType string
	// Status is online, busy or offline.
	Status string
}

func (q DirectoryQuery) values() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"capability": q.Capability, "task_type": q.TaskType, "status": q.Status} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}

// Capabilities reads what the agent declares (no token needed).
func (c *Client) Capabilities(ctx context.Context) (*Capabilities, error) {
	var caps Capabilities
	if _, _, err := c.do(ctx, http.MethodGet, "/capabilities", nil, nil, &caps); err != nil {
		return nil, fmt.Errorf("capabilities: %w", err)
	}
	return &caps, nil
}

// Interfaces lists the standard interfaces the agent implements (no token
// needed).
func (c *Client) Interfaces(ctx context.Context) (*InterfaceList, error) {
	var l InterfaceList
	if _, _, err := c.do(ctx, http.MethodGet, "/capabilities/interfaces", nil, nil, &l); err != nil {
		return nil, fmt.Errorf("interfaces: %w", err)
	}
	return &l, nil
}

// Compliance evaluates the agent itself (agentID "self") or one of its
// paired peers against the standard interfaces (tasks:read).
func (c *Client) Compliance(ctx context.Context, agentID string) (*Compliance, error) {
	eid, err := escapeID(agentID)
	if err != nil {
		return nil, err
	}
	var ev Compliance
	if _, _, err := c.do(ctx, http.MethodGet, "/agents/"+eid+"/compliance", nil, nil, &ev); err != nil {
		return nil, fmt.Errorf("compliance of %s: %w", agentID, err)
	}
	return &ev, nil
}

// Directory lists the agents registered with this agent acting as a
// registry, selected by q (GET /registry/agents, tasks:read).
func (c *Client) Directory(ctx context.Context, q DirectoryQuery) ([]DirectoryEntry, error) {
	return c.directory(ctx, "/registry/agents", q.values(), "directory")
}

// FindAgents answers FindByCapability from the agent's directory
// (GET /agents?capability=&task_type=&status=, tasks:read). At least one
// field of q must be set; an empty query lists the paired peers instead
// (ListPeers).
func (c *Client) FindAgents(ctx context.Context, q DirectoryQuery) ([]DirectoryEntry, error) {
	v := q.values()
	if len(v) == 0 {
		return nil, fmt.Errorf("find agents: give a capability, a task type or a status")
	}
	return c.directory(ctx, "/agents", v, "find agents")
}

func (c *Client) directory(ctx context.Context, route string, v url.Values, what string) ([]DirectoryEntry, error) {
	var out struct {
		Agents []DirectoryEntry `json:"agents"`
	}
	if _, _, err := c.do(ctx, http.MethodGet, route, v, nil, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out.Agents, nil
}

// Unregister removes an agent from the directory, and so the key pinned
// for it (DELETE /registry/agents/{agent_id}, admin).
func (c *Client) Unregister(ctx context.Context, agentID string) error {
	eid, err := escapeID(agentID)
	if err != nil {
		return err
	}
	if _, _, err := c.do(ctx, http.MethodDelete, "/registry/agents/"+eid, nil, nil, nil); err != nil {
		return fmt.Errorf("unregister %s: %w", agentID, err)
	}
	return nil
}
