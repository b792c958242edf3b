package mqtt

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Config is the "mqtt" section of the config file: the broker the agent
// connects to. With it, the uplink's endpoint may be UplinkToBroker:
// stored tier-1 batches then go to the broker instead of an upstream
// agent.
type Config struct {
	// URL is mqtt://host:port or mqtts://host:port (TLS).
	URL string `json:"url"`
	// URLs are more brokers of the same cluster, tried in turn when the
	// one in use is gone (Options.URLs).
	URLs []string `json:"urls,omitempty"`
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
}

// UplinkToBroker is the uplink endpoint that sends tier-1 batches to the
// broker of the mqtt section.
const UplinkToBroker = "mqtt://"

// Options are the transport's options of the section.
func (c *Config) Options(log *slog.Logger) Options {
	return Options{URL: c.URL, URLs: c.URLs, ClientID: c.ClientID, Username: c.Username, Password: c.Password,
		CAFile: c.CAFile, CertFile: c.CertFile, KeyFile: c.KeyFile, TopicPrefix: c.TopicPrefix,
		KeepAlive: time.Duration(c.KeepAliveSeconds) * time.Second, AnswerTimeout: time.Duration(c.AnswerTimeoutMS) * time.Millisecond,
		MaxReconnectInterval: time.Duration(c.MaxReconnectMS) * time.Millisecond, Logger: log}
}

// Validate reports every bad field of the section, each as "config:
// mqtt.FIELD: problem", joined with errors.Join (the southbound routes,
// tier-1's, are checked where the section is read: cli/config). The
// transport checks the rest when it starts.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	if !strings.HasPrefix(c.URL, "mqtt://") && !strings.HasPrefix(c.URL, "mqtts://") {
		bad("mqtt.url", "%q must be an mqtt:// or mqtts:// URL", c.URL)
	}
	for i, u := range c.URLs {
		if _, tls, err := brokerAddr(u); err != nil {
			bad(fmt.Sprintf("mqtt.urls[%d]", i), "%q must be an mqtt:// or mqtts:// URL", u)
		} else if tls != strings.HasPrefix(c.URL, "mqtts://") {
			bad(fmt.Sprintf("mqtt.urls[%d]", i), "%q: every broker of urls uses the scheme of mqtt.url (%q)", u, c.URL)
		}
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		bad("mqtt.cert_file", "cert_file and key_file go together")
	}
	if c.KeepAliveSeconds < 0 || c.KeepAliveSeconds > 65535 {
		bad("mqtt.keepalive_seconds", "%d is outside 0..65535", c.KeepAliveSeconds)
	}
	if c.AnswerTimeoutMS < 0 {
		bad("mqtt.answer_timeout_ms", "must not be negative")
	}
	if c.MaxReconnectMS < 0 {
		bad("mqtt.max_reconnect_ms", "must not be negative")
	}
	return errors.Join(errs...)
}
