package agent_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/agent"
)

func TestDefaultsAreValid(t *testing.T) {
	cfg := agent.Defaults()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Defaults().Validate() = %v", err)
	}
	if cfg.MaxConcurrentTasks != 10 || cfg.MaxTaskDurationSeconds != 3600 || cfg.MaxFileSize != 10<<20 ||
		cfg.Listen != "127.0.0.1:8080" || cfg.DataDir != "./data" {
		t.Errorf("defaults = %+v, want the SPEC limits (10 tasks, 3600 s, 10 MiB) on 127.0.0.1:8080 and ./data", cfg)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	cmd := []string{"/bin/true"}
	tests := []struct {
		field string
		mod   func(*agent.Config)
	}{
		{"data_dir", func(c *agent.Config) { c.DataDir = "" }},
		{"listen", func(c *agent.Config) { c.Listen = "8080" }},
		{"max_concurrent_tasks", func(c *agent.Config) { c.MaxConcurrentTasks = 0 }},
		{"max_concurrent_tasks", func(c *agent.Config) { c.MaxConcurrentTasks = 100_001 }},
		{"max_task_duration_seconds", func(c *agent.Config) { c.MaxTaskDurationSeconds = 0 }},
		{"max_file_size", func(c *agent.Config) { c.MaxFileSize = -1 }},
		{"retention.max_age_hours", func(c *agent.Config) { c.Retention.MaxAgeHours = 0 }},
		{"retention.keep_finished", func(c *agent.Config) { c.Retention.KeepFinished = 0 }},
		{"agent_id", func(c *agent.Config) { c.AgentID = "has space" }},
		{"agent_name", func(c *agent.Config) { c.AgentName = "a/b" }},
		{"agent_name", func(c *agent.Config) { c.AgentName = strings.Repeat("n", 129) }},
		{"system_id", func(c *agent.Config) { c.SystemID = "" }},
		{"handlers[0].task_type", func(c *agent.Config) { c.Handlers = []agent.CommandHandlerConfig{{Command: cmd}} }},
		{"handlers[1].task_type", func(c *agent.Config) {
			c.Handlers = []agent.CommandHandlerConfig{{TaskType: "x", Command: cmd}, {TaskType: "x", Command: cmd}}
		}},
		{"handlers[0].command", func(c *agent.Config) { c.Handlers = []agent.CommandHandlerConfig{{TaskType: "x"}} }},
		{"handlers[0].command", func(c *agent.Config) {
			c.Handlers = []agent.CommandHandlerConfig{{TaskType: "x", Command: []string{""}}}
		}},
		{"handlers[0].timeout_seconds", func(c *agent.Config) {
			c.Handlers = []agent.CommandHandlerConfig{{TaskType: "x", Command: cmd, TimeoutSeconds: -1}}
		}},
		{"handlers[0].disclose[0].peer", func(c *agent.Config) {
			c.Handlers = []agent.CommandHandlerConfig{{TaskType: "x", Command: cmd, Disclose: []agent.DisclosureRule{{Fields: []string{"a"}}}}}
		}},
		{"http.max_body_bytes", func(c *agent.Config) { c.HTTP.MaxBodyBytes = 0 }},
		{"http.max_conns_per_ip", func(c *agent.Config) { c.HTTP.MaxConnsPerIP = 0 }},
		{"http.idle_timeout_seconds", func(c *agent.Config) { c.HTTP.IdleTimeoutSeconds = -5 }},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			cfg := agent.Defaults()
			tt.mod(&cfg)
			err := cfg.Validate()
			if err == nil {
				t.Fatalf("Validate accepted a bad %s", tt.field)
			}
			if !strings.Contains(err.Error(), tt.field+":") {
				t.Errorf("Validate = %q, want it to name %s", err, tt.field)
			}
			if _, err := agent.New(cfg); err == nil {
				t.Errorf("New accepted a config with a bad %s", tt.field)
			}
		})
	}
	t.Run("several at once", func(t *testing.T) {
		cfg := agent.Defaults()
		cfg.DataDir, cfg.MaxFileSize = "", 0
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), "data_dir") || !strings.Contains(err.Error(), "max_file_size") {
			t.Errorf("Validate = %v, want both bad fields named", err)
		}
	})
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "synapse.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

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
	cfg := agent.Defaults()
	if err := cfg.LoadFile(path); err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	if cfg.MaxConcurrentTasks != 4 || cfg.AgentName != "gw" || cfg.Retention.KeepFinished != 50 {
		t.Errorf("loaded %+v", cfg)
	}
	if cfg.Retention.MaxAgeHours != 168 || cfg.MaxTaskDurationSeconds != 3600 {
		t.Errorf("fields absent from the file lost their defaults: %+v", cfg)
	}
	base := filepath.Dir(path)
	h := cfg.Handlers
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
		cfg := agent.Defaults()
		err := cfg.LoadFile(writeConfig(t, `{"max_concurent_tasks": 4}`))
		if err == nil || !strings.Contains(err.Error(), "max_concurent_tasks") {
			t.Errorf("LoadFile with a misspelt field = %v, want an error naming it", err)
		}
	})
	t.Run("admin token not from the file", func(t *testing.T) {
		cfg := agent.Defaults()
		if err := cfg.LoadFile(writeConfig(t, `{"AdminToken": "x"}`)); err == nil {
			t.Error("LoadFile accepted an admin token")
		}
	})
	t.Run("malformed", func(t *testing.T) {
		cfg := agent.Defaults()
		if err := cfg.LoadFile(writeConfig(t, `{"listen": 8080}`)); err == nil {
			t.Error("LoadFile accepted a number for listen")
		}
	})
	t.Run("missing file", func(t *testing.T) {
		cfg := agent.Defaults()
		if err := cfg.LoadFile(filepath.Join(t.TempDir(), "absent.json")); !errors.Is(err, fs.ErrNotExist) {
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
	cfg := agent.Defaults()
	if err := cfg.LoadEnv(func(k string) string { return env[k] }); err != nil {
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
			cfg := agent.Defaults()
			err := cfg.LoadEnv(func(k string) string {
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
