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
		{"store.checkpoint_interval_ms", func(c *agent.Config) { c.Store.CheckpointIntervalMS = 5 }},
		{"store.checkpoint_interval_ms", func(c *agent.Config) { c.Store.CheckpointIntervalMS = 60_001 }},
		{"store.checkpoint_log_bytes", func(c *agent.Config) { c.Store.CheckpointLogBytes = 0 }},
		{"store.checkpoint_log_bytes", func(c *agent.Config) { c.Store.CheckpointLogBytes = 64<<20 + 1 }},
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

// TestStoreSectionReachesTheStore: the store section's log limit is the
// opened store's. With checkpoints a minute apart, the same writes are
// checkpointed under a 64 KiB limit and not under the default 1 MiB.
func TestStoreSectionReachesTheStore(t *testing.T) {
	for _, tt := range []struct {
		logBytes int64
		want     bool
	}{{64 << 10, true}, {1 << 20, false}} {
		cfg := testConfig(t)
		cfg.Store.CheckpointIntervalMS, cfg.Store.CheckpointLogBytes = 60_000, tt.logBytes
		a := openAgent(t, cfg, nil)
		st := a.Store().Stats()
		before := st.Checkpoints.Load()
		for i := 0; st.LogBytes.Load() < 192<<10; i++ {
			if i == 2000 {
				t.Fatalf("log at %d bytes after %d tasks", st.LogBytes.Load(), i)
			}
			waitFinal(t, a, submit(t, a, "echo", `{"pad":"`+strings.Repeat("x", 1000)+`"}`).ID)
		}
		if got := st.Checkpoints.Load() > before; got != tt.want {
			t.Errorf("checkpoint_log_bytes %d: checkpointed %v after %d log bytes, want %v", tt.logBytes, got, st.LogBytes.Load(), tt.want)
		}
	}
}
