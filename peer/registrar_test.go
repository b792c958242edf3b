package peer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/cli/config"
	"github.com/synapse-edge/synapse/peer"
)

func TestRegistryConfig(t *testing.T) {
	t.Run("file and environment", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "c.json")
		doc := `{"registry":{"url":"http://127.0.0.1:9000","token_env":"REG_TOKEN","heartbeat_interval_seconds":5}}`
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := config.Defaults()
		if err := config.LoadFile(&cfg, path); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{"REG_TOKEN": "s3cret"}
		if err := config.LoadEnv(&cfg, func(k string) string { return env[k] }); err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		r := cfg.Registry
		if r == nil || r.URL != "http://127.0.0.1:9000" || r.Token != "s3cret" || r.HeartbeatInterval() != 5*time.Second {
			t.Errorf("registry = %+v", r)
		}
	})
	t.Run("default interval", func(t *testing.T) {
		r := peer.RegistryConfig{URL: "http://127.0.0.1:1"}
		if got := r.HeartbeatInterval(); got != 30*time.Second {
			t.Errorf("HeartbeatInterval() = %s, want 30s", got)
		}
	})
	for _, c := range []struct {
		field string
		r     peer.RegistryConfig
	}{
		{"registry.url", peer.RegistryConfig{URL: "127.0.0.1:9000"}},
		{"registry.url", peer.RegistryConfig{}},
		{"registry.heartbeat_interval_seconds", peer.RegistryConfig{URL: "http://127.0.0.1:1", HeartbeatIntervalSeconds: -1}},
		{"registry.heartbeat_interval_seconds", peer.RegistryConfig{URL: "http://127.0.0.1:1", HeartbeatIntervalSeconds: 86_401}},
	} {
		t.Run(c.field, func(t *testing.T) {
			cfg := config.Defaults()
			cfg.Registry = &c.r
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), c.field) {
				t.Errorf("Validate() = %v, want an error naming %s", err, c.field)
			}
		})
	}
}
