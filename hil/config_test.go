package hil_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/cli/config"
	"github.com/synapse-edge/synapse/hil"
)

func TestConfig(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		var cfg hil.Config
		if err := cfg.Validate(); err != nil {
			t.Fatalf("Validate: %v", err)
		}
		levels := cfg.EffectiveLevels()
		if len(levels) != 3 || levels[0].ReviewersScope != "hil:l1" || levels[2].ReviewersScope != "hil:l3" || levels[1].DeadlineSeconds != 300 {
			t.Errorf("default levels = %+v", levels)
		}
		if got := cfg.EffectiveDefaultAction(); got != agent.ActionReject {
			t.Errorf("default action = %q, want reject", got)
		}
		for _, s := range []auth.Scope{auth.ScopeHILL1, auth.ScopeHILL2, auth.ScopeHILL3} {
			if !slices.Contains(auth.KnownScopes, s) {
				t.Errorf("KnownScopes lacks %s", s)
			}
		}
	})
	t.Run("file replaces the levels", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config.json")
		body := `{"hil":{"levels":[{"reviewers_scope":"hil:l2","deadline_seconds":60,"notify_url":"http://127.0.0.1:9/hook"}],"default_action":"approve"}}`
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := config.Defaults()
		if err := config.LoadFile(&cfg, path); err != nil {
			t.Fatalf("LoadFile: %v", err)
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("Validate: %v", err)
		}
		want := []hil.Level{{ReviewersScope: "hil:l2", DeadlineSeconds: 60, NotifyURL: "http://127.0.0.1:9/hook"}}
		if got := cfg.HIL.EffectiveLevels(); !slices.Equal(got, want) || cfg.HIL.EffectiveDefaultAction() != agent.ActionApprove {
			t.Errorf("levels = %+v, action %q", got, cfg.HIL.DefaultAction)
		}
	})
	bad := []struct {
		name  string
		hil   hil.Config
		field string
	}{
		{"unknown scope", hil.Config{Levels: []hil.Level{{ReviewersScope: "hil:l9", DeadlineSeconds: 1}}}, "hil.levels[0].reviewers_scope"},
		{"zero deadline", hil.Config{Levels: []hil.Level{{ReviewersScope: "hil:l1"}}}, "hil.levels[0].deadline_seconds"},
		{"relative notify_url", hil.Config{Levels: []hil.Level{{ReviewersScope: "admin", DeadlineSeconds: 5, NotifyURL: "/hook"}}}, "hil.levels[0].notify_url"},
		{"default action", hil.Config{DefaultAction: "modify"}, "hil.default_action"},
		{"too many levels", hil.Config{Levels: slices.Repeat([]hil.Level{{ReviewersScope: "hil:l1", DeadlineSeconds: 1}}, hil.MaxLevels+1)}, "hil.levels"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Defaults()
			cfg.HIL = tt.hil
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.field+":") {
				t.Errorf("Validate = %v, want an error naming %s", err, tt.field)
			}
		})
	}
}
