package wire

import "time"

// TransportMode is how a requester gets a task's outcome (seed 000 §2.2).
type TransportMode string

// The four transport modes.
const (
	TransportCallback TransportMode = "callback"
	TransportPolling  TransportMode = "polling"
	TransportSync     TransportMode = "sync"
	TransportHybrid   TransportMode = "hybrid"
)

// SupportedTaskType describes one task type an agent runs (seed 000 §3.1).
type SupportedTaskType struct {
	Type          string `json:"type" msgpack:"type"`
	Name          string `json:"name" msgpack:"name"`
	Description   string `json:"description" msgpack:"description"`
	EstimatedTime string `json:"estimated_time" msgpack:"estimated_time"`
	InputSchema   string `json:"input_schema,omitempty" msgpack:"input_schema,omitempty"`
	// InputSchemaObject is InputSchema parsed, in JSON answers only (so
	// that jq .input_schema_object.required works); seed 000 has the text.
	InputSchemaObject JSONValue `json:"input_schema_object,omitempty" msgpack:"-"`
	OutputSchema      string    `json:"output_schema,omitempty" msgpack:"output_schema,omitempty"`
	Capabilities      []string  `json:"capabilities,omitempty" msgpack:"capabilities,omitempty"`
}

// AgentCapabilities is an agent's declaration of what it can do (seed 000 §2.1).
type AgentCapabilities struct {
	AgentID         string `json:"agent_id" msgpack:"agent_id"`
	AgentName       string `json:"agent_name" msgpack:"agent_name"`
	SystemID        string `json:"system_id" msgpack:"system_id"`
	ProtocolVersion string `json:"protocol_version" msgpack:"protocol_version"`

	SupportedTaskTypes      []SupportedTaskType `json:"supported_task_types" msgpack:"supported_task_types"`
	SupportedContentTypes   []string            `json:"supported_content_types" msgpack:"supported_content_types"`
	SupportedTransportModes []TransportMode     `json:"supported_transport_modes" msgpack:"supported_transport_modes"`

	MaxFileSize        int64 `json:"max_file_size" msgpack:"max_file_size"`
	MaxConcurrentTasks int   `json:"max_concurrent_tasks" msgpack:"max_concurrent_tasks"`
	MaxTaskDuration    int   `json:"max_task_duration_seconds" msgpack:"max_task_duration_seconds"`

	SupportProgressUpdates bool `json:"support_progress_updates" msgpack:"support_progress_updates"`
	SupportStreaming       bool `json:"support_streaming" msgpack:"support_streaming"`
	SupportHiL             bool `json:"support_hil" msgpack:"support_hil"`
	SupportGroups          bool `json:"support_groups" msgpack:"support_groups"`

	// ProtocolProfile is the protocol profile the agent meets (seed 002
	// §8.2: tp_core, tp_secure or tp_full; absent when none), an addition
	// to seed 000 §2.
	ProtocolProfile string `json:"protocol_profile,omitempty" msgpack:"protocol_profile,omitempty"`
}

// ProtocolVersion is the Synapse protocol version this code speaks.
const ProtocolVersion = "1.0.0"

// DefaultAgentCapabilities returns the defaults of seed 000 §2.3.
func DefaultAgentCapabilities() *AgentCapabilities {
	return &AgentCapabilities{
		ProtocolVersion:        ProtocolVersion,
		MaxFileSize:            10 * 1024 * 1024,
		MaxConcurrentTasks:     10,
		MaxTaskDuration:        3600,
		SupportProgressUpdates: true,
	}
}

// Identity is the public identity of an agent (SPEC §2).
type Identity struct {
	AgentID         string `json:"agent_id" msgpack:"agent_id"`
	AgentName       string `json:"agent_name" msgpack:"agent_name"`
	SystemID        string `json:"system_id" msgpack:"system_id"`
	PublicKey       string `json:"public_key" msgpack:"public_key"`
	Endpoint        string `json:"endpoint" msgpack:"endpoint"`
	ProtocolVersion string `json:"protocol_version" msgpack:"protocol_version"`
}

// Health is the answer of GET /health.
type Health struct {
	Status        string `json:"status" msgpack:"status"`
	Version       string `json:"version" msgpack:"version"`
	UptimeSeconds int64  `json:"uptime_seconds" msgpack:"uptime_seconds"`
	// Reason says why the status is NOT_SERVING: shutting_down or
	// store_failing.
	Reason string `json:"reason,omitempty" msgpack:"reason,omitempty"`
	// Config is the configuration file in force and its last reload;
	// absent when the agent was started without a file.
	Config *ConfigStatus `json:"config,omitempty" msgpack:"config,omitempty"`
}

// ConfigStatus is the configuration file an agent runs with.
type ConfigStatus struct {
	// File is the file's path, as given to serve.
	File string `json:"file" msgpack:"file"`
	// Hash is the SHA-256 (hex) of the file's bytes the agent last
	// applied, at start or by a reload (with a remote config:
	// config.OverlaidHash).
	Hash string `json:"hash" msgpack:"hash"`
	// RemoteVersion is the version of the remote config in force over
	// the file (cli/remoteconfig); absent: none.
	RemoteVersion uint64 `json:"remote_version,omitempty" msgpack:"remote_version,omitempty"`
	// LastReload is the last reload's outcome; absent before the first.
	LastReload *ReloadResult `json:"last_reload,omitempty" msgpack:"last_reload,omitempty"`
}

// Results of a reload (ReloadResult.Result).
const (
	// ReloadOK: the file was good and its live values are in force.
	ReloadOK = "ok"
	// ReloadInvalid: the file had problems and nothing changed.
	ReloadInvalid = "invalid"
)

// ReloadResult is the answer of POST /admin/reload and the last reload
// in /health: the configuration file read again, checked whole, and its
// live values applied at once — or, with a problem, nothing.
type ReloadResult struct {
	// Time is when the reload ran (RFC 3339, UTC).
	Time time.Time `json:"time" msgpack:"time"`
	// Result is ReloadOK or ReloadInvalid.
	Result string `json:"result" msgpack:"result"`
	// Trigger is what asked for it: sighup or api.
	Trigger string `json:"trigger" msgpack:"trigger"`
	// ConfigHash is the SHA-256 (hex) of the file's bytes read (empty
	// when it could not be read).
	ConfigHash string `json:"config_hash" msgpack:"config_hash"`
	// Problems are every problem of an invalid file, as synapse config
	// check prints them.
	Problems []string `json:"problems" msgpack:"problems"`
	// Applied names the live fields whose new values are now in force.
	Applied []string `json:"applied" msgpack:"applied"`
	// RestartRequired names the fields whose new values take effect only
	// after a restart: they keep their running values until then.
	RestartRequired []string `json:"restart_required" msgpack:"restart_required"`
}
