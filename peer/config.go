package peer

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/synapse-edge/synapse/registry"
)

// Config is the "p2p" section of the config file (seed 004 §5.4): the
// outbox's retries, heartbeats, the deadline of delegated tasks, and the
// secrets that sign webhooks and envelopes.
type Config struct {
	// MaxRetries is how many times a failed delivery is retried before the
	// message becomes a dead letter. Default 5.
	MaxRetries int `json:"max_retries"`
	// RetryBaseDelayMS is the base of the exponential backoff: retry n
	// waits a random time up to base * 2^n. Default 2000.
	RetryBaseDelayMS int `json:"retry_base_delay_ms,omitempty"`
	// TaskTimeoutSeconds is seed 004's TaskTimeout: the deadline of a
	// task delegated to a peer without ttl_seconds (Network.TaskTimeout).
	// Default 300.
	TaskTimeoutSeconds int `json:"task_timeout_seconds,omitempty"`
	// HeartbeatIntervalSeconds is how often each peer is sent a
	// p2p:heartbeat; a peer silent for three intervals is offline.
	// Default 30.
	HeartbeatIntervalSeconds int `json:"heartbeat_interval_seconds,omitempty"`
	// CallbackSecretEnv names the environment variable holding the HMAC
	// secret that signs webhook callbacks (X-Synapse-Signature). Without
	// one, callbacks are sent unsigned.
	CallbackSecretEnv string `json:"callback_secret_env,omitempty"`
	// CallbackSecret is read from CallbackSecretEnv at start; never from
	// the file.
	CallbackSecret string `json:"-"`
	// PeerSecrets are the HMAC secrets shared with peers: envelopes to
	// and from them carry and need X-Synapse-Signature (p2p_hmac.go).
	PeerSecrets []PeerSecretConfig `json:"peer_secrets,omitempty"`
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

// DefaultConfig is the p2p section when nothing is set.
func DefaultConfig() Config {
	return Config{MaxRetries: 5, RetryBaseDelayMS: 2000, TaskTimeoutSeconds: 300, HeartbeatIntervalSeconds: 30}
}

// RetryBaseDelay is retry_base_delay_ms as a duration.
func (c *Config) RetryBaseDelay() time.Duration {
	return time.Duration(c.RetryBaseDelayMS) * time.Millisecond
}

// HeartbeatInterval is heartbeat_interval_seconds as a duration.
func (c *Config) HeartbeatInterval() time.Duration {
	return time.Duration(c.HeartbeatIntervalSeconds) * time.Second
}

// TaskTimeout is task_timeout_seconds as a duration.
func (c *Config) TaskTimeout() time.Duration {
	return time.Duration(c.TaskTimeoutSeconds) * time.Second
}

// Validate reports the bad fields, each as "config: p2p.FIELD: problem",
// joined with errors.Join: the first problem of the limits, and the first
// of each peer secret.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	switch {
	case c.MaxRetries < 0 || c.MaxRetries > 30:
		bad("p2p.max_retries", "%d is outside 0..30", c.MaxRetries)
	case c.RetryBaseDelayMS < 1:
		bad("p2p.retry_base_delay_ms", "must be at least 1")
	case c.TaskTimeoutSeconds < 1:
		bad("p2p.task_timeout_seconds", "must be at least 1")
	case c.HeartbeatIntervalSeconds < 1:
		bad("p2p.heartbeat_interval_seconds", "must be at least 1")
	}
	for i, ps := range c.PeerSecrets {
		f := fmt.Sprintf("p2p.peer_secrets[%d]", i)
		switch {
		case ps.AgentID == "":
			bad(f+".agent_id", "must not be empty")
		case len(ps.Secrets) == 0 && len(ps.SecretEnvs) == 0:
			bad(f+".secret_envs", "must name at least one environment variable")
		case len(ps.SecretEnvs) > 0 && len(ps.Secrets) != len(ps.SecretEnvs):
			bad(f+".secret_envs", "every variable of %v must be set and not empty", ps.SecretEnvs)
		}
	}
	return errors.Join(errs...)
}

// Heartbeat intervals a registration may declare, in seconds (the
// registrar's and the registry's limits); 0 means DefaultRegistryInterval.
const (
	MinRegistryInterval     = registry.MinInterval
	MaxRegistryInterval     = registry.MaxInterval
	DefaultRegistryInterval = registry.DefaultInterval
)

// RegistryConfig is the "registry" section: the registry agent this agent
// registers with (seed 000 §6.4; registrar.go).
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

// Validate reports the bad fields, each as "config: registry.FIELD:
// problem", joined with errors.Join; r may be nil (no registry).
func (r *RegistryConfig) Validate() error {
	if r == nil {
		return nil
	}
	var errs []error
	if !strings.HasPrefix(r.URL, "http://") && !strings.HasPrefix(r.URL, "https://") {
		errs = append(errs, fmt.Errorf("config: registry.url: %q must be an http:// or https:// URL", r.URL))
	}
	if iv := r.HeartbeatIntervalSeconds; iv != 0 && (iv < MinRegistryInterval || iv > MaxRegistryInterval) {
		errs = append(errs, fmt.Errorf("config: registry.heartbeat_interval_seconds: %d is outside %d..%d", iv, MinRegistryInterval, MaxRegistryInterval))
	}
	return errors.Join(errs...)
}
