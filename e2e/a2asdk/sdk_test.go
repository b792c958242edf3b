package a2asdk_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/synapse-edge/synapse/e2e/a2asdk"
	"github.com/synapse-edge/synapse/internal/testutil"
)

// The same assertions, through a2a-go v2.3.1's client, against Synapse
// and against a2a-go's own in-memory server: v1.0 (the client built from
// the card, auth by the card's securityRequirements) and v0.3 (a2a-go's
// v0.3 compatibility transport).

func message(taskType string, parts ...*a2a.Part) *a2a.SendMessageRequest {
	m := a2a.NewMessage(a2a.MessageRoleUser, parts...)
	if taskType != "" {
		m.Metadata = map[string]any{"task_type": taskType}
	}
	return &a2a.SendMessageRequest{Message: m}
}

func noWait(r *a2a.SendMessageRequest) *a2a.SendMessageRequest {
	r.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	return r
}

func send(t *testing.T, c *a2aclient.Client, ctx context.Context, req *a2a.SendMessageRequest) *a2a.Task {
	t.Helper()
	res, err := c.SendMessage(ctx, req)
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	tk, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage = %T, want a task", res)
	}
	return tk
}

func TestGoSDK(t *testing.T) {
	for _, tg := range []*target{startSynapse(t, ""), startRef(t), startJS(t)} {
		t.Run(tg.name+"/v1.0", func(t *testing.T) {
			c, ctx := tg.client(t)
			suite(t, tg, c, ctx, false)
		})
		t.Run(tg.name+"/v0.3", func(t *testing.T) {
			c, ctx := tg.client03(t)
			suite(t, tg, c, ctx, true)
		})
	}
}

func suite(t *testing.T, tg *target, c *a2aclient.Client, ctx context.Context, v03 bool) {
	t.Run("send blocking", func(t *testing.T) {
		tk := send(t, c, ctx, message("", a2a.NewTextPart("hello")))
		if tk.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("state = %s, want completed", tk.Status.State)
		}
		if d, ok := a2asdk.ResultData(tk); !ok || d["text"] != "hello" {
			t.Errorf("result = %v, want the echoed text", tk.Artifacts)
		}
	})
	var running *a2a.Task
	t.Run("send non-blocking, get", func(t *testing.T) {
		running = send(t, c, ctx, noWait(message("sleep", a2a.NewDataPart(map[string]any{"ms": 60000}))))
		if running.Status.State.Terminal() {
			t.Fatalf("state = %s, want a task still running", running.Status.State)
		}
		zero := 0
		got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: running.ID, HistoryLength: &zero})
		if err != nil || got.ID != running.ID || len(got.History) != 0 {
			t.Fatalf("GetTask = %+v, %v; want the task without history", got, err)
		}
	})
	if running == nil {
		t.Fatal("no running task")
	}
	if !v03 {
		t.Run("list", func(t *testing.T) {
			testutil.Eventually(t, 20*time.Second, "the running task listed as working", func() bool {
				res, err := c.ListTasks(ctx, &a2a.ListTasksRequest{Status: a2a.TaskStateWorking, PageSize: 10})
				if err != nil {
					t.Fatalf("ListTasks: %v", err)
				}
				return slices.ContainsFunc(res.Tasks, func(x *a2a.Task) bool { return x.ID == running.ID }) && res.TotalSize >= 1
			})
			all, err := c.ListTasks(ctx, &a2a.ListTasksRequest{PageSize: 1})
			if err != nil || len(all.Tasks) != 1 || all.NextPageToken == "" || all.TotalSize < 2 {
				t.Fatalf("ListTasks(pageSize 1) = %+v, %v; want one task, a next page and the total", all, err)
			}
			for _, x := range all.Tasks {
				if len(x.Artifacts) != 0 {
					t.Errorf("task %s listed with artifacts, want none unless asked", x.ID)
				}
			}
			next, err := c.ListTasks(ctx, &a2a.ListTasksRequest{PageSize: 1, PageToken: all.NextPageToken})
			if err != nil || len(next.Tasks) != 1 || next.Tasks[0].ID == all.Tasks[0].ID {
				t.Errorf("second page = %+v, %v", next, err)
			}
		})
	}
	t.Run("push config", func(t *testing.T) {
		url := "http://127.0.0.1:9/hook"
		set, err := c.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: running.ID, ID: "p1", URL: url, Token: "tk"})
		if err != nil || set.ID != "p1" || set.TaskID != running.ID {
			t.Fatalf("CreateTaskPushConfig = %+v, %v", set, err)
		}
		got, err := c.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: running.ID, ID: "p1"})
		if err != nil || got.URL != url || got.Token != "tk" {
			t.Fatalf("GetTaskPushConfig = %+v, %v", got, err)
		}
		list, err := c.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: running.ID})
		if err != nil || len(list) != 1 || list[0].ID != "p1" {
			t.Fatalf("ListTaskPushConfigs = %+v, %v", list, err)
		}
		if err := c.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: running.ID, ID: "p1"}); err != nil {
			t.Fatalf("DeleteTaskPushConfig: %v", err)
		}
		if _, err := c.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: running.ID, ID: "p1"}); err == nil {
			t.Error("GetTaskPushConfig after delete succeeded")
		}
	})
	t.Run("cancel", func(t *testing.T) {
		tk, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: running.ID})
		if err != nil || tk.Status.State != a2a.TaskStateCanceled {
			t.Fatalf("CancelTask = %+v, %v", tk, err)
		}
		again, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: running.ID})
		if !errors.Is(err, a2a.ErrTaskNotCancelable) && !tg.differs(t, "cancel twice") {
			t.Errorf("second cancel: %+v, %v; want ErrTaskNotCancelable", again, err)
		}
	})
	t.Run("stream", func(t *testing.T) {
		var kinds []string
		var last a2a.TaskState
		var result map[string]any
		for ev, err := range c.SendStreamingMessage(ctx, message("sleep", a2a.NewDataPart(map[string]any{"ms": 100}))) {
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			switch e := ev.(type) {
			case *a2a.Task:
				kinds = append(kinds, "task")
			case *a2a.TaskStatusUpdateEvent:
				kinds = append(kinds, "status:"+string(e.Status.State))
				last = e.Status.State
			case *a2a.TaskArtifactUpdateEvent:
				kinds = append(kinds, "artifact")
				if d, ok := e.Artifact.Parts[0].Data().(map[string]any); ok {
					result = d
				}
			}
		}
		if len(kinds) < 3 || kinds[0] != "task" || last != a2a.TaskStateCompleted {
			t.Fatalf("events = %v, want the task first and a completed status last", kinds)
		}
		if result["slept_ms"] != float64(100) {
			t.Errorf("artifact data = %v", result)
		}
	})
	t.Run("subscribe", func(t *testing.T) {
		tk := send(t, c, ctx, noWait(message("sleep", a2a.NewDataPart(map[string]any{"ms": 300}))))
		var last a2a.TaskState
		for ev, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: tk.ID}) {
			if err != nil {
				t.Fatalf("subscribe: %v", err)
			}
			if e, ok := ev.(*a2a.TaskStatusUpdateEvent); ok {
				last = e.Status.State
			}
		}
		if last != a2a.TaskStateCompleted {
			t.Errorf("last state = %s, want completed", last)
		}
	})
	t.Run("errors", func(t *testing.T) {
		if _, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: "nope"}); !errors.Is(err, a2a.ErrTaskNotFound) {
			t.Errorf("GetTask(nope): %v, want ErrTaskNotFound", err)
		}
		if _, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: "nope"}); !errors.Is(err, a2a.ErrTaskNotFound) {
			t.Errorf("CancelTask(nope): %v, want ErrTaskNotFound", err)
		}
		_, err := c.SendMessage(ctx, message("teleport", a2a.NewTextPart("x")))
		if !errors.Is(err, a2a.ErrUnsupportedOperation) && !tg.differs(t, "executor error") {
			t.Errorf("unknown task type: %v, want ErrUnsupportedOperation", err)
		}
		var streamErr error
		for _, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: "nope"}) {
			streamErr = err
		}
		if !errors.Is(streamErr, a2a.ErrTaskNotFound) && !tg.differs(t, "pre-stream error") {
			t.Errorf("SubscribeToTask(nope): %v, want ErrTaskNotFound", streamErr)
		}
		done := send(t, c, ctx, message("", a2a.NewTextPart("x")))
		streamErr = nil
		n := 0
		for ev, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: done.ID}) {
			if err != nil {
				streamErr = err
			} else if ev != nil {
				n++
			}
		}
		if streamErr == nil && n == 0 && !tg.differs(t, "pre-stream error") {
			t.Errorf("SubscribeToTask(final task): no events and no error")
		}
		if !errors.Is(streamErr, a2a.ErrUnsupportedOperation) && !tg.differs(t, "subscribe final") && !tg.differs(t, "pre-stream error") {
			t.Errorf("SubscribeToTask(final task): %v, want ErrUnsupportedOperation", streamErr)
		}
	})
}

// Without the card's credentials Synapse refuses every call with 401 and
// a JSON-RPC error the SDK reports.
func TestGoSDKAuth(t *testing.T) {
	tg := startSynapse(t, "")
	tg.token = "wrong"
	c, ctx := tg.client(t)
	if _, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: "x"}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("GetTask with a wrong token: %v, want HTTP 401", err)
	}
	for _, err := range c.SendStreamingMessage(ctx, message("", a2a.NewTextPart("x"))) {
		if err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("stream with a wrong token: %v, want HTTP 401", err)
		}
	}
}
