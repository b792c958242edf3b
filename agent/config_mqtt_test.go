package agent_test

import (
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/agent"
)

func TestMQTTConfigValidate(t *testing.T) {
	broker := func(c *agent.Config) { c.MQTT = &agent.MQTTConfig{URL: "mqtt://127.0.0.1:1883"} }
	tests := []struct {
		name, field string
		mod         func(*agent.Config)
	}{
		{"http url", "mqtt.url", func(c *agent.Config) { c.MQTT = &agent.MQTTConfig{URL: "http://127.0.0.1:1883"} }},
		{"cert without key", "mqtt.cert_file", func(c *agent.Config) { broker(c); c.MQTT.CertFile = "c.pem" }},
		{"keepalive", "mqtt.keepalive_seconds", func(c *agent.Config) { broker(c); c.MQTT.KeepAliveSeconds = 70000 }},
		{"wildcard in system_id", "system_id", func(c *agent.Config) { broker(c); c.SystemID = "plant+a" }},
		{"wildcard in agent_id", "agent_id", func(c *agent.Config) { broker(c); c.AgentID = "gw#1" }},
		{"uplink names a broker", "uplink.endpoint", func(c *agent.Config) {
			broker(c)
			c.Uplink = &agent.UplinkConfig{Endpoint: "mqtt://10.0.0.1:1883"}
		}},
		{"uplink to the broker without one", "uplink.endpoint", func(c *agent.Config) {
			c.Uplink = &agent.UplinkConfig{Endpoint: "mqtt://"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := agent.Defaults()
			tt.mod(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.field+":") {
				t.Fatalf("Validate = %v, want it to name %s", err, tt.field)
			}
		})
	}
	cfg := agent.Defaults()
	broker(&cfg)
	cfg.Uplink = &agent.UplinkConfig{Endpoint: agent.UplinkToBroker}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("a valid mqtt section: %v", err)
	}
	if !cfg.UplinkViaMQTT() {
		t.Error("UplinkViaMQTT = false with endpoint mqtt://")
	}
}
