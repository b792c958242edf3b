package agent_test

import (
	"os"
	"path/filepath"
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

func TestMQTTConfigLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.json")
	conf := `{"mqtt":{"url":"mqtts://broker:8883","username":"gw","password_env":"BROKER_PW",
		"ca_file":"ca.pem","cert_file":"/etc/c.pem","key_file":"k.pem","topic_prefix":"fleet/a"}}`
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := agent.Defaults()
	if err := cfg.LoadFile(path); err != nil {
		t.Fatal(err)
	}
	if err := cfg.LoadEnv(func(k string) string { return map[string]string{"BROKER_PW": "pw"}[k] }); err != nil {
		t.Fatal(err)
	}
	m := cfg.MQTT
	if m.Password != "pw" || m.Username != "gw" || m.TopicPrefix != "fleet/a" {
		t.Errorf("mqtt = %+v", m)
	}
	if m.CAFile != filepath.Join(dir, "ca.pem") || m.CertFile != "/etc/c.pem" || m.KeyFile != filepath.Join(dir, "k.pem") {
		t.Errorf("files not relative to the config file: %q %q %q", m.CAFile, m.CertFile, m.KeyFile)
	}
	if err := os.WriteFile(path, []byte(`{"mqtt":{"url":"mqtt://b","password":"in the file"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if c := agent.Defaults(); c.LoadFile(path) == nil {
		t.Error("a password in the file was accepted")
	}
}
