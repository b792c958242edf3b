package agent_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/wire"
)

// TestUnknownTaskTypeSuggests: a misspelled task type is refused with the
// closest type and the list of types; a far one gets the list only.
func TestUnknownTaskTypeSuggests(t *testing.T) {
	a := openAgent(t, testConfig(t), nil)
	for _, c := range []struct{ typ, suggestion string }{{"ecoh", "echo"}, {"Sleeep", "sleep"}, {"resize_image", ""}} {
		t.Run(c.typ, func(t *testing.T) {
			_, err := a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: c.typ, Payload: wire.JSONValue(`{}`)}, nil)
			we := wantCode(t, err, wire.CodeCapabilityLacking)
			if got, _ := we.Details["suggestion"].(string); got != c.suggestion {
				t.Errorf("suggestion = %q, want %q (%s)", got, c.suggestion, we.Message)
			}
			if c.suggestion != "" && !strings.Contains(we.Message, `did you mean "`+c.suggestion+`"?`) {
				t.Errorf("message %q lacks the suggestion", we.Message)
			}
			if !strings.Contains(we.Message, "echo, ") {
				t.Errorf("message %q does not list the task types", we.Message)
			}
		})
	}
}

// TestMissingCommandWarned: a handler whose program is not there is
// reported when the agent is built, not at its first task.
func TestMissingCommandWarned(t *testing.T) {
	var logs bytes.Buffer
	cfg := testConfig(t)
	cfg.Handlers = []agent.CommandHandlerConfig{
		{TaskType: "present", Command: []string{"/bin/sh", "-c", "cat"}},
		{TaskType: "resize_image", Command: []string{filepath.Join(t.TempDir(), "resize")}},
	}
	if _, err := agent.New(cfg, agent.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}); err != nil {
		t.Fatalf("New: %v", err)
	}
	out := logs.String()
	if !strings.Contains(out, "task_type=resize_image") || !strings.Contains(out, "handlers[1].command") {
		t.Errorf("no warning about the missing command in:\n%s", out)
	}
	if strings.Contains(out, "task_type=present") {
		t.Errorf("a warning about a command that exists:\n%s", out)
	}
}
