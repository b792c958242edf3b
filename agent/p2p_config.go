package agent

import (
	"strings"
	"time"
)

// Configuration of the peer network (package peer) that agent.Config
// still holds: the registry this agent registers with, the secrets shared
// with peers, and the disclosure rules of a handler.

// Heartbeat intervals a registration may declare, in seconds (the
// registrar's and the registry's limits); 0 means DefaultRegistryInterval.
const (
	MinRegistryInterval     = 1
	MaxRegistryInterval     = 86_400
	DefaultRegistryInterval = 30
)

// RegistryConfig names the registry agent this agent registers with (seed
// 000 §6.4; config key "registry").
type RegistryConfig struct {
	// URL is the registry agent's base URL, e.g. http://10.0.0.2:8080.
	URL string `json:"url"`
	// TokenEnv names the environment variable holding the bearer token for
	// the registry (a token with the registry:write scope there).
	TokenEnv string `json:"token_env,omitempty"`
	// Token is read from TokenEnv at start; never from the file.
	Token string `json:"-"`
	// HeartbeatIntervalSeconds is how often the agent registers again;
	// the registry shows it offline after three intervals without one.
	// Default 30.
	HeartbeatIntervalSeconds int `json:"heartbeat_interval_seconds,omitempty"`
}

// HeartbeatInterval is heartbeat_interval_seconds as a duration, with the
// default for 0.
func (r *RegistryConfig) HeartbeatInterval() time.Duration {
	if r.HeartbeatIntervalSeconds == 0 {
		return DefaultRegistryInterval * time.Second
	}
	return time.Duration(r.HeartbeatIntervalSeconds) * time.Second
}

// check reports bad fields to bad; r may be nil.
func (r *RegistryConfig) check(bad func(field, format string, args ...any)) {
	if r == nil {
		return
	}
	if !strings.HasPrefix(r.URL, "http://") && !strings.HasPrefix(r.URL, "https://") {
		bad("registry.url", "%q must be an http:// or https:// URL", r.URL)
	}
	if iv := r.HeartbeatIntervalSeconds; iv != 0 && (iv < MinRegistryInterval || iv > MaxRegistryInterval) {
		bad("registry.heartbeat_interval_seconds", "%d is outside %d..%d", iv, MinRegistryInterval, MaxRegistryInterval)
	}
}

// PeerSecretConfig names the shared secrets of one peer.
type PeerSecretConfig struct {
	AgentID string `json:"agent_id"`
	// SecretEnvs name the environment variables that hold the secrets,
	// newest first (several during a rotation).
	SecretEnvs []string `json:"secret_envs"`
	// Secrets are read from SecretEnvs at start; never from the file.
	Secrets [][]byte `json:"-"`
}

// DisclosureRule names the result fields Peer (an agent_id, or "*" for any
// peer no other rule names) may see.
type DisclosureRule struct {
	Peer   string   `json:"peer"`
	Fields []string `json:"fields"`
}
