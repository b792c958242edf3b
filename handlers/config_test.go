package handlers_test

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/handlers"
)

func TestValidateNamesTheField(t *testing.T) {
	cmd := []string{"/bin/true"}
	tests := []struct {
		field string
		cmds  []handlers.Command
	}{
		{"handlers[0].task_type", []handlers.Command{{Command: cmd}}},
		{"handlers[1].task_type", []handlers.Command{{TaskType: "x", Command: cmd}, {TaskType: "x", Command: cmd}}},
		{"handlers[0].command", []handlers.Command{{TaskType: "x"}}},
		{"handlers[0].command", []handlers.Command{{TaskType: "x", Command: []string{""}}}},
		{"handlers[0].timeout_seconds", []handlers.Command{{TaskType: "x", Command: cmd, TimeoutSeconds: -1}}},
		{"handlers[0].disclose[0].peer", []handlers.Command{{TaskType: "x", Command: cmd, Disclose: []agent.DisclosureRule{{Fields: []string{"a"}}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			c := handlers.Config{Commands: tt.cmds}
			err := c.Validate()
			if err == nil {
				t.Fatalf("Validate accepted a bad %s", tt.field)
			}
			if !strings.Contains(err.Error(), tt.field+":") {
				t.Errorf("Validate = %q, want it to name %s", err, tt.field)
			}
			a, err := agent.New(testConfig(t), agent.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := handlers.Register(a, handlers.Options{Config: c}); err == nil {
				t.Errorf("Register accepted a config with a bad %s", tt.field)
			}
		})
	}
}

// TestRegister: the zero Config gives the built-in task types; with
// disable_builtins there are none; a command configured as
// natural_language replaces the built-in one.
func TestRegister(t *testing.T) {
	types := func(a *agent.Agent) []string {
		var out []string
		for _, tt := range a.Capabilities().SupportedTaskTypes {
			out = append(out, tt.Type)
		}
		return out
	}
	a := openAgent(t, handlers.Config{})
	if got, want := types(a), []string{"confirm", "echo", handlers.NaturalLanguageType, "sleep"}; !slices.Equal(got, want) {
		t.Errorf("built-in task types = %v, want %v", got, want)
	}
	b := openAgent(t, handlers.Config{DisableBuiltins: true})
	if n := len(b.Capabilities().SupportedTaskTypes); n != 0 || b.SupportsTaskType("echo") {
		t.Errorf("with builtins disabled: %d task types, echo supported %v", n, b.SupportsTaskType("echo"))
	}
	c := openAgent(t, handlers.Config{Commands: []handlers.Command{{TaskType: handlers.NaturalLanguageType, Command: []string{"cat"}}}})
	for _, tt := range c.Capabilities().SupportedTaskTypes {
		if tt.Type == handlers.NaturalLanguageType && !slices.Contains(tt.Capabilities, "command") {
			t.Errorf("natural_language is %+v, want the configured command", tt)
		}
	}
}

// TestMissingCommandWarned: a handler whose program is not there is
// reported when it is registered, not at its first task.
func TestMissingCommandWarned(t *testing.T) {
	var logs bytes.Buffer
	a, err := agent.New(testConfig(t), agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cmds := []handlers.Command{
		{TaskType: "present", Command: []string{"/bin/sh", "-c", "cat"}},
		{TaskType: "resize_image", Command: []string{filepath.Join(t.TempDir(), "resize")}},
	}
	if err := handlers.Register(a, handlers.Options{Config: handlers.Config{Commands: cmds}, Logger: slog.New(slog.NewTextHandler(&logs, nil))}); err != nil {
		t.Fatalf("Register: %v", err)
	}
	out := logs.String()
	if !strings.Contains(out, "task_type=resize_image") || !strings.Contains(out, "handlers[1].command") {
		t.Errorf("no warning about the missing command in:\n%s", out)
	}
	if strings.Contains(out, "task_type=present") {
		t.Errorf("a warning about a command that exists:\n%s", out)
	}
}

// TestCommandNameAndEstimatedTime: every task type has a name and an
// estimated_time (seed 000 §3.2); a command that sets neither gets the
// task type as a title and 0 s to its limit (timeout_seconds, else
// max_task_duration_seconds); what a command sets is kept.
func TestCommandNameAndEstimatedTime(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxTaskDurationSeconds = 600
	a, err := agent.New(cfg, agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cmds := []handlers.Command{
		{TaskType: "resize_image", Command: []string{"cat"}},
		{TaskType: "ocr", Command: []string{"cat"}, TimeoutSeconds: 120},
		{TaskType: "pdf-to.text", Command: []string{"cat"}, TimeoutSeconds: 7200},
		{TaskType: "poll", Command: []string{"cat"}, TimeoutSeconds: 45},
		{TaskType: "own", Command: []string{"cat"}, Name: "Own name", EstimatedTime: "1s-10s", TimeoutSeconds: 30},
	}
	if err := handlers.Register(a, handlers.Options{Config: handlers.Config{DisableBuiltins: true, Commands: cmds}}); err != nil {
		t.Fatalf("Register: %v", err)
	}
	for _, tt := range []struct{ taskType, name, est string }{
		{"resize_image", "Resize image", "0s-10m"},
		{"ocr", "Ocr", "0s-2m"},
		{"pdf-to.text", "Pdf to text", "0s-10m"}, // the task's maximum is shorter
		{"poll", "Poll", "0s-45s"},
		{"own", "Own name", "1s-10s"},
	} {
		t.Run(tt.taskType, func(t *testing.T) {
			got, err := a.GetTaskTypeCapabilities(tt.taskType)
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != tt.name || got.EstimatedTime != tt.est {
				t.Errorf("name, estimated_time = %q, %q; want %q, %q", got.Name, got.EstimatedTime, tt.name, tt.est)
			}
		})
	}
}
