package agent

import (
	"fmt"
	"strings"

	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/tier1/southbound"
)

// MQTTConfig is the "mqtt" section: the broker the agent connects to (the
// transport/mqtt package; the command wires it). With it, the uplink's
// endpoint may be "mqtt://": stored tier-1 batches then go to the broker
// instead of an upstream agent.
type MQTTConfig struct {
	// URL is mqtt://host:port or mqtts://host:port (TLS).
	URL string `json:"url"`
	// ClientID names the broker session; default the agent_id.
	ClientID string `json:"client_id,omitempty"`
	Username string `json:"username,omitempty"`
	// PasswordEnv names the environment variable holding the password.
	PasswordEnv string `json:"password_env,omitempty"`
	// Password is read from PasswordEnv at start; never from the file.
	Password string `json:"-"`
	// CAFile verifies the broker (default the system roots); CertFile and
	// KeyFile are a client certificate. Relative to the config file.
	CAFile   string `json:"ca_file,omitempty"`
	CertFile string `json:"cert_file,omitempty"`
	KeyFile  string `json:"key_file,omitempty"`
	// TopicPrefix starts every topic; default "synapse".
	TopicPrefix string `json:"topic_prefix,omitempty"`
	// KeepAliveSeconds is the MQTT keep-alive; default 30.
	KeepAliveSeconds int `json:"keepalive_seconds,omitempty"`
	// AnswerTimeoutMS bounds the wait for a peer's answer to an envelope
	// sent through the broker; without one the envelope is sent again
	// later. Default 10000.
	AnswerTimeoutMS int `json:"answer_timeout_ms,omitempty"`
	// MaxReconnectMS caps the back-off between connection attempts;
	// default 30000.
	MaxReconnectMS int `json:"max_reconnect_ms,omitempty"`
	// TaskEvents publishes each task's status changes as JSON to
	// {prefix}/{system_id}/{agent_id}/events (best effort: see the README).
	TaskEvents bool `json:"task_events,omitempty"`
	// Southbound routes turn device messages on the broker into tier-1
	// frames (package tier1/southbound).
	Southbound []southbound.Route `json:"southbound,omitempty"`
}

// SouthboundMappings compiles the southbound routes against the routines
// (the built-in one and the config's).
func (c *Config) SouthboundMappings() ([]*southbound.Mapping, error) {
	if c.MQTT == nil || len(c.MQTT.Southbound) == 0 {
		return nil, nil
	}
	reg, err := tier1.NewRegistry(append([]tier1.Descriptor{tier1.Telemetry()}, c.Tier1.Routines...)...)
	if err != nil {
		return nil, fmt.Errorf("tier1.routines: %w", err)
	}
	var out []*southbound.Mapping
	seen := map[string]bool{}
	for i, r := range c.MQTT.Southbound {
		m, err := southbound.Compile(r, reg)
		if err != nil {
			return nil, fmt.Errorf("mqtt.southbound[%d].%w", i, err)
		}
		if seen[r.Topic] {
			return nil, fmt.Errorf("mqtt.southbound[%d].topic: %q is mapped twice", i, r.Topic)
		}
		seen[r.Topic] = true
		out = append(out, m)
	}
	return out, nil
}

// UplinkToBroker is the uplink endpoint that sends tier-1 batches to the
// broker of the mqtt section.
const UplinkToBroker = "mqtt://"

// UplinkViaMQTT reports whether the uplink goes to the MQTT broker.
func (c *Config) UplinkViaMQTT() bool {
	return c.Uplink != nil && c.Uplink.Endpoint == UplinkToBroker
}

// validateMQTT checks the mqtt section and what it constrains elsewhere;
// the transport checks the rest when it starts.
func (c *Config) validateMQTT(bad func(field, format string, args ...any)) {
	m := c.MQTT
	if m == nil {
		if c.Uplink != nil && strings.HasPrefix(c.Uplink.Endpoint, "mqtt") {
			bad("uplink.endpoint", "%q needs the mqtt section (the broker's address goes in mqtt.url)", c.Uplink.Endpoint)
		}
		return
	}
	if !strings.HasPrefix(m.URL, "mqtt://") && !strings.HasPrefix(m.URL, "mqtts://") {
		bad("mqtt.url", "%q must be an mqtt:// or mqtts:// URL", m.URL)
	}
	if (m.CertFile == "") != (m.KeyFile == "") {
		bad("mqtt.cert_file", "cert_file and key_file go together")
	}
	if m.KeepAliveSeconds < 0 || m.KeepAliveSeconds > 65535 {
		bad("mqtt.keepalive_seconds", "%d is outside 0..65535", m.KeepAliveSeconds)
	}
	if m.AnswerTimeoutMS < 0 {
		bad("mqtt.answer_timeout_ms", "must not be negative")
	}
	if m.MaxReconnectMS < 0 {
		bad("mqtt.max_reconnect_ms", "must not be negative")
	}
	// These name topic levels: a wildcard in them would address others.
	for _, id := range []struct{ field, v string }{{"agent_id", c.AgentID}, {"agent_name", c.AgentName}, {"system_id", c.SystemID}} {
		if strings.ContainsAny(id.v, "+#") {
			bad(id.field, "%q must not contain + or # with the mqtt section (it is a topic level)", id.v)
		}
	}
	if _, err := c.SouthboundMappings(); err != nil && !strings.HasPrefix(err.Error(), "tier1.routines") {
		field, msg, _ := strings.Cut(err.Error(), ": ")
		bad(field, "%s", msg)
	}
	if u := c.Uplink; u != nil && strings.HasPrefix(u.Endpoint, "mqtt") && u.Endpoint != UplinkToBroker {
		bad("uplink.endpoint", "%q: to send to the broker write %q; the broker's address goes in mqtt.url", u.Endpoint, UplinkToBroker)
	}
}
