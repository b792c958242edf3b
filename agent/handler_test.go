package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/handlers"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/wire"
)

func TestHandleRejectsBadHandlers(t *testing.T) {
	a, err := agent.New(testConfig(t), agent.Options{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := handlers.Register(a, handlers.Options{}); err != nil {
		t.Fatalf("handlers.Register: %v", err)
	}
	ok := agent.HandlerFunc(func(context.Context, *agent.Run) (any, error) { return nil, nil })
	tests := []struct {
		name string
		h    agent.Handler
		want string
	}{
		{"no type", agent.Handler{Func: ok}, "task type is empty"},
		{"no func", agent.Handler{Type: wire.SupportedTaskType{Type: "x"}}, "Func is nil"},
		{"duplicate", agent.Handler{Type: wire.SupportedTaskType{Type: "echo"}, Func: ok}, "already registered"},
		{"unsupported keyword", agent.Handler{Type: wire.SupportedTaskType{Type: "y"}, Func: ok,
			InputSchema: json.RawMessage(`{"$ref":"#/x"}`)}, "$ref"},
		{"schema not JSON", agent.Handler{Type: wire.SupportedTaskType{Type: "z"}, Func: ok,
			InputSchema: json.RawMessage(`{`)}, "input_schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := a.Handle(tt.h)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Handle = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestGoHandlerSchema(t *testing.T) {
	var ran atomic.Int32
	a := openAgent(t, testConfig(t), newFakeClock(), agent.Handler{
		Type:        wire.SupportedTaskType{Type: "resize"},
		InputSchema: json.RawMessage(`{"type":"object","required":["w","h"],"properties":{"w":{"type":"integer","minimum":1},"h":{"type":"integer","minimum":1}},"additionalProperties":false}`),
		Func: func(ctx context.Context, r *agent.Run) (any, error) {
			var p struct{ W, H int }
			if err := r.Decode(&p); err != nil {
				return nil, err
			}
			ran.Add(1)
			return map[string]int{"area": p.W * p.H}, nil
		},
	})
	t.Run("valid", func(t *testing.T) {
		task := submit(t, a, "resize", `{"w":3,"h":4}`)
		got := waitFinal(t, a, task.ID)
		if got.Status != wire.StatusCompleted || !jsonEqual(t, got.Result, []byte(`{"area":12}`)) {
			t.Errorf("resize 3x4 = %s %s, want completed {\"area\":12}", got.Status, got.Result)
		}
	})
	t.Run("violations", func(t *testing.T) {
		_, err := a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: "resize", Payload: wire.JSONValue(`{"w":0,"h":2,"d":1}`)}, agent.SubmitOptions{})
		we := wantCode(t, err, wire.CodeValSchema)
		v, _ := we.Details["violations"].([]string)
		if len(v) != 2 || !strings.Contains(we.Message, "/w") || !strings.Contains(we.Message, "/d") {
			t.Errorf("violations = %q (message %q), want /d not allowed and /w below minimum", v, we.Message)
		}
	})
	t.Run("missing two fields", func(t *testing.T) {
		task := submit(t, a, "resize", `{}`)
		var fields []string
		for _, m := range task.MissingFields {
			fields = append(fields, m.Field)
		}
		if task.Status != wire.StatusInfoNeeded || !slices.Equal(fields, []string{"w", "h"}) {
			t.Errorf("resize {} = %s missing %v, want info_needed [w h]", task.Status, fields)
		}
	})
	if n := ran.Load(); n != 1 {
		t.Errorf("the handler ran %d times, want once (only for the valid payload)", n)
	}
}

func TestGoHandlerErrors(t *testing.T) {
	a := openAgent(t, testConfig(t), newFakeClock(),
		agent.Handler{Type: wire.SupportedTaskType{Type: "denied"}, Func: func(context.Context, *agent.Run) (any, error) {
			return nil, wire.Errorf(wire.CodePermissionDenied, "the vault is closed")
		}},
		agent.Handler{Type: wire.SupportedTaskType{Type: "wrapped"}, Func: func(context.Context, *agent.Run) (any, error) {
			return nil, errors.Join(errors.New("context"), wire.Errorf(wire.CodeInvalidParams, "bad width"))
		}},
		agent.Handler{Type: wire.SupportedTaskType{Type: "plain"}, Func: func(context.Context, *agent.Run) (any, error) {
			return nil, errors.New("disk full")
		}},
		agent.Handler{Type: wire.SupportedTaskType{Type: "panics"}, Func: func(context.Context, *agent.Run) (any, error) {
			panic("nil map write")
		}},
		agent.Handler{Type: wire.SupportedTaskType{Type: "badjson"}, Func: func(context.Context, *agent.Run) (any, error) {
			return json.RawMessage(`{"unterminated"`), nil
		}},
		agent.Handler{Type: wire.SupportedTaskType{Type: "unencodable"}, Func: func(context.Context, *agent.Run) (any, error) {
			return make(chan int), nil
		}},
		agent.Handler{Type: wire.SupportedTaskType{Type: "nothing"}, Func: func(context.Context, *agent.Run) (any, error) {
			return nil, nil
		}},
	)
	tests := []struct {
		taskType   string
		status     wire.Status
		code       wire.ErrorCode
		msg        string
		wantResult string
	}{
		{"denied", wire.StatusFailed, wire.CodePermissionDenied, "the vault is closed", ""},
		{"wrapped", wire.StatusFailed, wire.CodeInvalidParams, "bad width", ""},
		{"plain", wire.StatusFailed, wire.CodeExecutionFailed, "disk full", ""},
		{"panics", wire.StatusFailed, wire.CodeExecutionFailed, "nil map write", ""},
		{"badjson", wire.StatusFailed, wire.CodeExecutionFailed, "invalid JSON", ""},
		{"unencodable", wire.StatusFailed, wire.CodeExecutionFailed, "chan", ""},
		{"nothing", wire.StatusCompleted, "", "", ""}, // null is no result, live or stored
	}
	for _, tt := range tests {
		t.Run(tt.taskType, func(t *testing.T) {
			task := submit(t, a, tt.taskType, `{}`)
			got := waitFinal(t, a, task.ID)
			if got.Status != tt.status || got.ErrorCode != tt.code || !strings.Contains(got.ErrorMessage, tt.msg) {
				t.Errorf("%s: %s %s %q, want %s %s containing %q", tt.taskType, got.Status, got.ErrorCode, got.ErrorMessage, tt.status, tt.code, tt.msg)
			}
			if tt.status == wire.StatusCompleted && string(got.Result) != tt.wantResult {
				t.Errorf("%s: result %q, want %q", tt.taskType, got.Result, tt.wantResult)
			}
			if stored, err := a.Task(task.ID); err != nil || string(stored.Result) != string(got.Result) {
				t.Errorf("%s: read again the result is %q (%v), as the task ended %q", tt.taskType, stored.Result, err, got.Result)
			}
		})
	}
	t.Run("agent keeps working", func(t *testing.T) {
		task := submit(t, a, "echo", `{"after":"panic"}`)
		if got := waitFinal(t, a, task.ID); got.Status != wire.StatusCompleted {
			t.Errorf("echo after a panicking handler: %s", got.Status)
		}
	})
}

func TestProgressAndLog(t *testing.T) {
	reported := make(chan struct{})
	release := make(chan struct{})
	var runInfo struct{ id, taskType, payload string }
	a := openAgent(t, testConfig(t), newFakeClock(), agent.Handler{
		Type: wire.SupportedTaskType{Type: "steps"},
		Func: func(ctx context.Context, r *agent.Run) (any, error) {
			runInfo.id, runInfo.taskType, runInfo.payload = r.ID(), r.TaskType(), string(r.Payload())
			r.Progress(30, "a third")
			r.Log("step one done")
			r.Progress(-5, "")
			r.Progress(250, "beyond")
			r.Progress(42, "")
			close(reported)
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return "ok", nil
		},
	})
	task := submit(t, a, "steps", `{"k":1}`)
	<-reported
	waitFor := func(want int) {
		t.Helper()
		var got int
		testutil.Eventually(t, 10*time.Second, "the stored progress to reach the last report", func() bool {
			task, err := a.Task(task.ID)
			got = -1
			if err == nil {
				got = task.Progress
			}
			return got == want
		})
	}
	waitFor(42)
	close(release)
	final := waitFinal(t, a, task.ID)
	if final.Status != wire.StatusCompleted || string(final.Result) != `"ok"` || final.Progress != 100 {
		t.Errorf("final = %s %s progress %d, want completed \"ok\" 100", final.Status, final.Result, final.Progress)
	}
	if runInfo.id != task.ID || runInfo.taskType != "steps" || runInfo.payload != `{"k":1}` {
		t.Errorf("the handler saw %+v", runInfo)
	}

	var progress []float64
	var messages, logs []string
	for _, e := range eventsOf(t, a, task.ID) {
		m := eventData(t, e)
		switch e.Type {
		case wire.EventProgress:
			progress = append(progress, m["progress"].(float64))
			msg, _ := m["message"].(string)
			messages = append(messages, msg)
		case wire.EventLog:
			logs = append(logs, m["line"].(string))
		}
	}
	if want := []float64{30, 0, 100, 42}; !slices.Equal(progress, want) {
		t.Errorf("progress events = %v, want %v (clamped to 0..100)", progress, want)
	}
	if want := []string{"a third", "", "beyond", ""}; !slices.Equal(messages, want) {
		t.Errorf("progress messages = %q, want %q", messages, want)
	}
	if want := []string{"step one done"}; !slices.Equal(logs, want) {
		t.Errorf("log events = %q, want %q", logs, want)
	}
}
