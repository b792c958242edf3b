package config_test

import (
	"log/slog"
	"slices"
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/cli/config"
	"github.com/synapse-edge/synapse/transport/mqtt"
)

func TestChangedFields(t *testing.T) {
	base := config.Defaults()
	for _, tc := range []struct {
		name   string
		change func(f *config.File)
		want   []string
	}{
		{"nothing", func(*config.File) {}, nil},
		{"top level", func(f *config.File) { f.MaxConcurrentTasks = 3; f.Listen = "127.0.0.1:1" }, []string{"listen", "max_concurrent_tasks"}},
		{"in a section", func(f *config.File) { f.Tier1.RetentionHours = 1; f.HTTP.MaxBodyBytes = 1 }, []string{"http.max_body_bytes", "tier1.retention_hours"}},
		{"a section added", func(f *config.File) { f.MQTT = &config.MQTT{Config: mqtt.Config{URL: "mqtt://127.0.0.1:1883"}} }, []string{"mqtt"}},
		{"a list", func(f *config.File) { f.Approvals = []agent.ApprovalRule{{TaskType: "valve"}} }, []string{"approvals"}},
		{"a secret is not compared", func(f *config.File) { f.AdminToken = "0123456789abcdef0123" }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := config.Defaults()
			tc.change(&next)
			got, err := config.ChangedFields(base, next)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("ChangedFields = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestLevel(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want slog.Level
		ok   bool
	}{{"", slog.LevelInfo, false}, {"debug", slog.LevelDebug, true}, {"WARN", slog.LevelWarn, true}, {"error", slog.LevelError, true}} {
		f := config.File{LogLevel: tc.in}
		if got, ok := f.Level(); got != tc.want || ok != tc.ok {
			t.Errorf("Level(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	f := config.Defaults()
	f.LogLevel = "loud"
	if err := f.Validate(); err == nil || err.Error() != `config: log_level: "loud" is not debug, info, warn or error` {
		t.Errorf("Validate of log_level loud: %v", err)
	}
}
