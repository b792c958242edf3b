package httpapi_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
)

// The reference A2A Go SDK's client (v0.3, JSON-RPC) drives the agent,
// built from the agent's own card.

// bearer adds the admin token to every request.
type bearer struct{ rt http.RoundTripper }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+adminToken)
	return b.rt.RoundTrip(r)
}

func sdkClient(t *testing.T, ts *testServer) *a2aclient.Client {
	t.Helper()
	var card sdk.AgentCard
	r := ts.do(t, "GET", "/.well-known/agent-card.json", nil, withToken(""))
	if err := json.Unmarshal(r.body, &card); err != nil {
		t.Fatalf("the SDK cannot read the agent card: %v", err)
	}
	hc := &http.Client{Transport: bearer{rt: ts.client.Transport}, Timeout: pollTimeout}
	c, err := a2aclient.NewFromCard(t.Context(), &card, a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		t.Fatalf("NewFromCard: %v", err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

func sdkMessage(taskType string, parts ...sdk.Part) *sdk.MessageSendParams {
	m := sdk.NewMessage(sdk.MessageRoleUser, parts...)
	if taskType != "" {
		m.Metadata = map[string]any{"task_type": taskType}
	}
	return &sdk.MessageSendParams{Message: m}
}

func sdkResult(t *testing.T, tk *sdk.Task) map[string]any {
	t.Helper()
	if len(tk.Artifacts) != 1 || len(tk.Artifacts[0].Parts) != 1 {
		t.Fatalf("artifacts = %+v, want one with one part", tk.Artifacts)
	}
	dp, ok := tk.Artifacts[0].Parts[0].(sdk.DataPart)
	if !ok {
		t.Fatalf("part = %T, want a DataPart", tk.Artifacts[0].Parts[0])
	}
	return dp.Data
}

func TestA2ASDKClient(t *testing.T) {
	ts := startServer(t, allowLoopback)
	c := sdkClient(t, ts)
	ctx := t.Context()

	t.Run("send blocking", func(t *testing.T) {
		res, err := c.SendMessage(ctx, sdkMessage("", sdk.TextPart{Text: "hello"}))
		if err != nil {
			t.Fatal(err)
		}
		tk, ok := res.(*sdk.Task)
		if !ok || tk.Status.State != sdk.TaskStateCompleted {
			t.Fatalf("result = %#v, want a completed task", res)
		}
		if got := sdkResult(t, tk)["text"]; got != "hello" {
			t.Errorf("result text = %v", got)
		}
	})
	var running *sdk.Task
	t.Run("send non-blocking, get", func(t *testing.T) {
		p := sdkMessage("sleep", sdk.DataPart{Data: map[string]any{"ms": 60000}})
		f := false
		p.Config = &sdk.MessageSendConfig{Blocking: &f}
		res, err := c.SendMessage(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		tk, ok := res.(*sdk.Task)
		if !ok || tk.Status.State.Terminal() {
			t.Fatalf("result = %#v, want a task still running", res)
		}
		running = tk
		got, err := c.GetTask(ctx, &sdk.TaskQueryParams{ID: tk.ID})
		if err != nil || got.ID != tk.ID {
			t.Fatalf("GetTask = %+v, %v", got, err)
		}
	})
	t.Run("push config", func(t *testing.T) {
		if running == nil {
			t.Skip("no running task")
		}
		set, err := c.SetTaskPushConfig(ctx, &sdk.TaskPushConfig{TaskID: running.ID,
			Config: sdk.PushConfig{ID: "p1", URL: "http://127.0.0.1:9/hook", Token: "tk"}})
		if err != nil || set.Config.ID != "p1" || set.TaskID != running.ID {
			t.Fatalf("SetTaskPushConfig = %+v, %v", set, err)
		}
		got, err := c.GetTaskPushConfig(ctx, &sdk.GetTaskPushConfigParams{TaskID: running.ID, ConfigID: "p1"})
		if err != nil || got.Config.URL != "http://127.0.0.1:9/hook" || got.Config.Token != "tk" {
			t.Fatalf("GetTaskPushConfig = %+v, %v", got, err)
		}
		list, err := c.ListTaskPushConfig(ctx, &sdk.ListTaskPushConfigParams{TaskID: running.ID})
		if err != nil || len(list) != 1 {
			t.Fatalf("ListTaskPushConfig = %+v, %v", list, err)
		}
		if err := c.DeleteTaskPushConfig(ctx, &sdk.DeleteTaskPushConfigParams{TaskID: running.ID, ConfigID: "p1"}); err != nil {
			t.Fatalf("DeleteTaskPushConfig: %v", err)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		if running == nil {
			t.Skip("no running task")
		}
		tk, err := c.CancelTask(ctx, &sdk.TaskIDParams{ID: running.ID})
		if err != nil || tk.Status.State != sdk.TaskStateCanceled {
			t.Fatalf("CancelTask = %+v, %v", tk, err)
		}
		_, err = c.CancelTask(ctx, &sdk.TaskIDParams{ID: running.ID})
		if !errors.Is(err, sdk.ErrTaskNotCancelable) {
			t.Errorf("second cancel: %v, want ErrTaskNotCancelable", err)
		}
	})
	t.Run("stream", func(t *testing.T) {
		var kinds []string
		var final *sdk.TaskStatusUpdateEvent
		var result map[string]any
		for ev, err := range c.SendStreamingMessage(ctx, sdkMessage("sleep", sdk.DataPart{Data: map[string]any{"ms": 100}})) {
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			switch e := ev.(type) {
			case *sdk.Task:
				kinds = append(kinds, "task")
			case *sdk.TaskStatusUpdateEvent:
				kinds = append(kinds, "status:"+string(e.Status.State))
				final = e
			case *sdk.TaskArtifactUpdateEvent:
				kinds = append(kinds, "artifact")
				if dp, ok := e.Artifact.Parts[0].(sdk.DataPart); ok {
					result = dp.Data
				}
			}
		}
		if len(kinds) < 3 || kinds[0] != "task" || final == nil || !final.Final || final.Status.State != sdk.TaskStateCompleted {
			t.Fatalf("events = %v, want the task first and a final completed status", kinds)
		}
		if result["slept_ms"] != float64(100) {
			t.Errorf("artifact data = %v", result)
		}
	})
	t.Run("resubscribe", func(t *testing.T) {
		p := sdkMessage("sleep", sdk.DataPart{Data: map[string]any{"ms": 150}})
		f := false
		p.Config = &sdk.MessageSendConfig{Blocking: &f}
		res, err := c.SendMessage(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		var last sdk.TaskState
		for ev, err := range c.ResubscribeToTask(ctx, &sdk.TaskIDParams{ID: res.(*sdk.Task).ID}) {
			if err != nil {
				t.Fatalf("resubscribe: %v", err)
			}
			if e, ok := ev.(*sdk.TaskStatusUpdateEvent); ok {
				last = e.Status.State
			}
		}
		if last != sdk.TaskStateCompleted {
			t.Errorf("last state = %s, want completed", last)
		}
	})
	t.Run("errors", func(t *testing.T) {
		if _, err := c.GetTask(ctx, &sdk.TaskQueryParams{ID: "nope"}); !errors.Is(err, sdk.ErrTaskNotFound) {
			t.Errorf("GetTask(nope): %v, want ErrTaskNotFound", err)
		}
		_, err := c.SendMessage(ctx, sdkMessage("teleport", sdk.TextPart{Text: "x"}))
		if !errors.Is(err, sdk.ErrUnsupportedOperation) {
			t.Errorf("unknown type: %v, want ErrUnsupportedOperation", err)
		}
	})
}
