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
