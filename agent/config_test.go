package agent_test

import (
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
			if _, err := agent.New(cfg, agent.Options{}); err == nil {
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
