package config_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/cli/config"
	"github.com/synapse-edge/synapse/handlers"
	"github.com/synapse-edge/synapse/httpapi"
	"github.com/synapse-edge/synapse/negotiate"
)

func TestLoadFile(t *testing.T) {
	path := writeConfig(t, `{
		"max_concurrent_tasks": 4,
		"agent_name": "gw",
		"retention": {"keep_finished": 50},
		"handlers": [
			{"task_type": "resize", "command": ["./bin/resize", "--fast"], "dir": "work", "timeout_seconds": 9},
			{"task_type": "shell", "command": ["sh", "-c", "cat"]},
			{"task_type": "abs", "command": ["/usr/bin/env"], "dir": "/tmp"}
		]
	}`)
	cfg := config.Defaults()
	if err := config.LoadFile(&cfg, path); err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	if cfg.MaxConcurrentTasks != 4 || cfg.AgentName != "gw" || cfg.Retention.KeepFinished != 50 {
		t.Errorf("loaded %+v", cfg)
	}
	if cfg.Retention.MaxAgeHours != 168 || cfg.MaxTaskDurationSeconds != 3600 {
		t.Errorf("fields absent from the file lost their defaults: %+v", cfg)
	}
	base := filepath.Dir(path)
	h := cfg.Commands
	if len(h) != 3 {
		t.Fatalf("%d handlers, want 3", len(h))
	}
	if want := []string{filepath.Join(base, "bin/resize"), "--fast"}; !slices.Equal(h[0].Command, want) || h[0].Dir != filepath.Join(base, "work") {
		t.Errorf("relative command %v dir %q, want %v and %s (relative to the file)", h[0].Command, h[0].Dir, want, filepath.Join(base, "work"))
	}
	if h[0].TimeoutSeconds != 9 {
		t.Errorf("timeout_seconds = %d, want 9", h[0].TimeoutSeconds)
	}
	if !slices.Equal(h[1].Command, []string{"sh", "-c", "cat"}) {
		t.Errorf("a command looked up in PATH was rewritten: %v", h[1].Command)
	}
	if h[2].Command[0] != "/usr/bin/env" || h[2].Dir != "/tmp" {
		t.Errorf("absolute paths were rewritten: %v %q", h[2].Command, h[2].Dir)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate after LoadFile: %v", err)
	}

	t.Run("unknown field", func(t *testing.T) {
		cfg := config.Defaults()
		err := config.LoadFile(&cfg, writeConfig(t, `{"max_concurent_tasks": 4}`))
		if err == nil || !strings.Contains(err.Error(), "max_concurent_tasks") {
			t.Errorf("LoadFile with a misspelt field = %v, want an error naming it", err)
		}
	})
	t.Run("admin token not from the file", func(t *testing.T) {
		cfg := config.Defaults()
		if err := config.LoadFile(&cfg, writeConfig(t, `{"AdminToken": "x"}`)); err == nil {
			t.Error("LoadFile accepted an admin token")
		}
	})
	t.Run("malformed", func(t *testing.T) {
		cfg := config.Defaults()
		if err := config.LoadFile(&cfg, writeConfig(t, `{"listen": 8080}`)); err == nil {
			t.Error("LoadFile accepted a number for listen")
		}
	})
	t.Run("missing file", func(t *testing.T) {
		cfg := config.Defaults()
		if err := config.LoadFile(&cfg, filepath.Join(t.TempDir(), "absent.json")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("LoadFile(missing) = %v, want a not-exist error", err)
		}
	})
}

func TestLoadEnv(t *testing.T) {
	env := map[string]string{
		"SYNAPSE_DATA":                      "/var/lib/synapse",
		"SYNAPSE_LISTEN":                    "127.0.0.1:9090",
		"SYNAPSE_AGENT_NAME":                "gw",
		"SYNAPSE_ADMIN_TOKEN":               "secret",
		"SYNAPSE_MAX_CONCURRENT_TASKS":      "25",
		"SYNAPSE_MAX_TASK_DURATION_SECONDS": "60",
	}
	cfg := config.Defaults()
	if err := config.LoadEnv(&cfg, func(k string) string { return env[k] }); err != nil {
		t.Fatalf("LoadEnv: %v", err)
	}
	if cfg.DataDir != "/var/lib/synapse" || cfg.Listen != "127.0.0.1:9090" || cfg.AgentName != "gw" ||
		cfg.AdminToken != "secret" || cfg.MaxConcurrentTasks != 25 || cfg.MaxTaskDurationSeconds != 60 {
		t.Errorf("after LoadEnv: %+v", cfg)
	}
	if cfg.SystemID != "edge" {
		t.Errorf("unset SYNAPSE_SYSTEM_ID changed system_id to %q", cfg.SystemID)
	}

	for _, bad := range []string{"ten", "1.5", "9999999999999999999999"} {
		t.Run(bad, func(t *testing.T) {
			cfg := config.Defaults()
			err := config.LoadEnv(&cfg, func(k string) string {
				if k == "SYNAPSE_MAX_CONCURRENT_TASKS" {
					return bad
				}
				return ""
			})
			if err == nil || !strings.Contains(err.Error(), "SYNAPSE_MAX_CONCURRENT_TASKS") || !strings.Contains(err.Error(), bad) {
				t.Errorf("LoadEnv(%q) = %v, want an error naming the variable and value", bad, err)
			}
			if cfg.MaxConcurrentTasks != 10 {
				t.Errorf("a bad value changed max_concurrent_tasks to %d", cfg.MaxConcurrentTasks)
			}
		})
	}
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "synapse.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMQTTConfigLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.json")
	conf := `{"mqtt":{"url":"mqtts://broker:8883","username":"gw","password_env":"BROKER_PW",
		"ca_file":"ca.pem","cert_file":"/etc/c.pem","key_file":"k.pem","topic_prefix":"fleet/a"}}`
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Defaults()
	if err := config.LoadFile(&cfg, path); err != nil {
		t.Fatal(err)
	}
	if err := config.LoadEnv(&cfg, func(k string) string { return map[string]string{"BROKER_PW": "pw"}[k] }); err != nil {
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
	if c := config.Defaults(); config.LoadFile(&c, path) == nil {
		t.Error("a password in the file was accepted")
	}
}

func TestA2AConfig(t *testing.T) {
	cfg := config.Defaults()
	if err := config.LoadFile(&cfg, writeConfig(t, `{"a2a": {"peers": [{"agent_id": "b", "token_env": "B_A2A_TOKEN"}, {"agent_id": "c", "token_env": "C_A2A_TOKEN"}]}}`)); err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	env := map[string]string{"B_A2A_TOKEN": "tok-b"}
	if err := config.LoadEnv(&cfg, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if got := cfg.A2A.TokenFor("b"); got != "tok-b" {
		t.Errorf("TokenFor(b) = %q, want tok-b", got)
	}
	if got := cfg.A2A.TokenFor("x"); got != "" {
		t.Errorf("TokenFor(x) = %q, want none", got)
	}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "a2a.peers[1].token_env") {
		t.Errorf("Validate with C_A2A_TOKEN unset = %v, want an error naming a2a.peers[1].token_env", err)
	}
	env["C_A2A_TOKEN"] = "tok-c"
	if err := config.LoadEnv(&cfg, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	b, err := json.Marshal(cfg)
	if err != nil || strings.Contains(string(b), "tok-") {
		t.Errorf("the config as JSON shows a token (%v): %s", err, b)
	}
}

func TestNegotiationConfig(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		n := config.Defaults().Negotiation
		if got := n.Attempts(); got != negotiate.DefaultAttempts {
			t.Errorf("Attempts() = %+v, want 30 s and 3 retries", got)
		}
		if n.ContractTTL() != 24*time.Hour || len(n.EffectiveTiers()) != 3 ||
			strings.Join(n.EffectiveTransports(), ",") != "native_tp,rest_api" {
			t.Errorf("defaults: ttl %v tiers %v transports %v", n.ContractTTL(), n.EffectiveTiers(), n.EffectiveTransports())
		}
	})
	zero := 0
	four := 4
	for _, tc := range []struct {
		field string
		mod   func(*negotiate.Config)
	}{
		{"negotiation.tiers[0]", func(n *negotiate.Config) { n.Tiers = []string{"tier_4"} }},
		{"negotiation.transports[0]", func(n *negotiate.Config) { n.Transports = []string{"a2a"} }},
		{"negotiation.transports[1]", func(n *negotiate.Config) { n.Transports = []string{"rest_api", "carrier_pigeon"} }},
		{"negotiation.min_security_level", func(n *negotiate.Config) { n.MinSecurityLevel = "medium" }},
		{"negotiation.max_security_level", func(n *negotiate.Config) { n.MaxSecurityLevel = "extreme" }},
		{"negotiation.max_security_level", func(n *negotiate.Config) { n.MinSecurityLevel, n.MaxSecurityLevel = "high", "standard" }},
		{"negotiation.contract_ttl_seconds", func(n *negotiate.Config) { n.ContractTTLSeconds = 86401 }},
		{"negotiation.timeout_ms", func(n *negotiate.Config) { n.TimeoutMS = 30001 }},
		{"negotiation.retries", func(n *negotiate.Config) { n.Retries = &four }},
		{"negotiation.private_fields", func(n *negotiate.Config) { n.PrivateFields = map[string][]string{"claim": {"a b"}} }},
		{"negotiation.llm.url", func(n *negotiate.Config) { n.LLM = &negotiate.LLMConfig{URL: "127.0.0.1:8081", Model: "m"} }},
		{"negotiation.llm.model", func(n *negotiate.Config) { n.LLM = &negotiate.LLMConfig{URL: "http://127.0.0.1:8081/v1"} }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			cfg := config.Defaults()
			tc.mod(&cfg.Negotiation)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), "config: "+tc.field+":") {
				t.Errorf("Validate() = %v, want an error naming %s", err, tc.field)
			}
		})
	}
	t.Run("file and environment", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config.json")
		raw := `{"negotiation": {"tiers": ["tier_3_natural_language"], "transports": ["rest_api"], "min_security_level": "standard",
			"contract_ttl_seconds": 600, "timeout_ms": 500, "retries": 0, "require_contract": false,
			"private_fields": {"claim": ["ssn"]},
			"llm": {"url": "http://127.0.0.1:8081/v1", "model": "tiny", "api_key_env": "TEST_LLM_KEY"}}}`
		if err := os.WriteFile(path, []byte(raw), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := config.Defaults()
		if err := config.LoadFile(&cfg, path); err != nil {
			t.Fatal(err)
		}
		if err := config.LoadEnv(&cfg, func(k string) string {
			if k == "TEST_LLM_KEY" {
				return "secret-key"
			}
			return ""
		}); err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		n := cfg.Negotiation
		if n.LLM == nil || n.LLM.APIKey != "secret-key" || n.Attempts() != (negotiate.Attempts{Timeout: 500 * time.Millisecond, Retries: zero}) ||
			n.ContractTTL() != 10*time.Minute || n.ContractRequired() || n.PrivateFields["claim"][0] != "ssn" {
			t.Errorf("loaded %+v (llm %+v)", n, n.LLM)
		}
	})
}

// TestHTTPSection: the "http" section of the file is the server's limits
// (httpapi.Limits), not the agent's; Load checks them.
func TestHTTPSection(t *testing.T) {
	f, err := config.Load(writeConfig(t, `{"max_concurrent_tasks": 3, "http": {"max_body_bytes": 2048}}`), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	want := httpapi.DefaultLimits()
	want.MaxBodyBytes = 2048
	if f.HTTP != want || f.MaxConcurrentTasks != 3 {
		t.Errorf("http = %+v, max_concurrent_tasks %d; want %+v and 3", f.HTTP, f.MaxConcurrentTasks, want)
	}
	_, err = config.Load(writeConfig(t, `{"http": {"max_conns": -1}}`), func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "config: http.max_conns: must be at least 1") {
		t.Errorf("Load with http.max_conns -1 = %v, want an error naming the field", err)
	}
}

// TestHandlersSection: disable_builtins and handlers, at the top level of
// the file, are the handlers' (handlers.Config); Load checks them with the
// other sections it checks, and Validate checks every section at once.
func TestHandlersSection(t *testing.T) {
	f, err := config.Load(writeConfig(t, `{"disable_builtins": true, "handlers": [{"task_type": "x", "command": ["cat"]}]}`), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if !f.DisableBuiltins || len(f.Commands) != 1 || f.Commands[0].TaskType != "x" {
		t.Errorf("handlers = %+v", f.Handlers)
	}
	_, err = config.Load(writeConfig(t, `{"handlers": [{"task_type": "x"}], "http": {"max_conns": -1}}`), func(string) string { return "" })
	for _, want := range []string{"config: handlers[0].command: must name a program", "config: http.max_conns:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load with a bad handler and http.max_conns = %v, want %q in it", err, want)
		}
	}
	f = config.Defaults()
	f.DataDir = ""
	f.Commands = []handlers.Command{{TaskType: "x", TimeoutSeconds: -1, Command: []string{"cat"}}}
	err = f.Validate()
	for _, want := range []string{"config: data_dir:", "config: handlers[0].timeout_seconds:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want %q in it", err, want)
		}
	}
}
