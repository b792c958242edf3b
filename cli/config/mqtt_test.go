package config_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/cli/config"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/tier1/southbound"
	"github.com/synapse-edge/synapse/transport/mqtt"
)

// route reads a southbound route written as in the config file.
func route(t *testing.T, js string) southbound.Route {
	t.Helper()
	var r southbound.Route
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestMQTTConfigValidate(t *testing.T) {
	broker := func(c *config.File) { c.MQTT = &config.MQTT{Config: mqtt.Config{URL: "mqtt://127.0.0.1:1883"}} }
	tests := []struct {
		name, field string
		mod         func(*config.File)
	}{
		{"http url", "mqtt.url", func(c *config.File) { c.MQTT = &config.MQTT{Config: mqtt.Config{URL: "http://127.0.0.1:1883"}} }},
		{"cert without key", "mqtt.cert_file", func(c *config.File) { broker(c); c.MQTT.CertFile = "c.pem" }},
		{"second broker not mqtt", "mqtt.urls[1]", func(c *config.File) {
			broker(c)
			c.MQTT.URLs = []string{"mqtt://127.0.0.1:1884", "ws://127.0.0.1:1885"}
		}},
		{"second broker without tls", "mqtt.urls[0]", func(c *config.File) {
			c.MQTT = &config.MQTT{Config: mqtt.Config{URL: "mqtts://127.0.0.1:8883", URLs: []string{"mqtt://127.0.0.1:1884"}}}
		}},
		{"keepalive", "mqtt.keepalive_seconds", func(c *config.File) { broker(c); c.MQTT.KeepAliveSeconds = 70000 }},
		{"wildcard in system_id", "system_id", func(c *config.File) { broker(c); c.SystemID = "plant+a" }},
		{"wildcard in agent_id", "agent_id", func(c *config.File) { broker(c); c.AgentID = "gw#1" }},
		{"uplink names a broker", "uplink.endpoint", func(c *config.File) {
			broker(c)
			c.Uplink = &tier1.UplinkConfig{Endpoint: "mqtt://10.0.0.1:1883"}
		}},
		{"uplink to the broker without one", "uplink.endpoint", func(c *config.File) {
			c.Uplink = &tier1.UplinkConfig{Endpoint: "mqtt://"}
		}},
		{"southbound field not mapped", "mqtt.southbound[0].seq", func(c *config.File) {
			broker(c)
			c.MQTT.Southbound = []southbound.Route{route(t, `{"topic": "p/+/t", "routine": "synapse.telemetry",
				"device_id": "{1}", "ts": "$.t", "metric": "temp", "value": "$.v"}`)}
		}},
		{"southbound topic twice", "mqtt.southbound[1].topic", func(c *config.File) {
			broker(c)
			r := route(t, `{"topic": "p/+/t", "routine": "synapse.telemetry",
				"device_id": "{1}", "seq": 0, "ts": "$.t", "metric": "temp", "value": "$.v"}`)
			c.MQTT.Southbound = []southbound.Route{r, r}
		}},
		{"southbound unknown routine", "mqtt.southbound[0].routine", func(c *config.File) {
			broker(c)
			c.MQTT.Southbound = []southbound.Route{route(t, `{"topic": "p/+/t", "routine": "acme.x"}`)}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Defaults()
			tt.mod(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.field+":") {
				t.Fatalf("Validate = %v, want it to name %s", err, tt.field)
			}
		})
	}
	cfg := config.Defaults()
	broker(&cfg)
	cfg.Uplink = &tier1.UplinkConfig{Endpoint: mqtt.UplinkToBroker}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("a valid mqtt section: %v", err)
	}
	if err := cfg.Config.Validate(); err != nil {
		t.Errorf("the agent refuses an uplink to the broker: %v", err)
	}
}
