package a2asrv_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/synapse-edge/synapse/a2a"
	"github.com/synapse-edge/synapse/a2a/a2asrv"
	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/handlers"
)

// TestCall runs the methods on an agent without any transport: a
// blocking send, get with historyLength, list, cancel of a final task,
// errors as A2A errors.
func TestCall(t *testing.T) {
	cfg := agent.Defaults()
	cfg.DataDir = t.TempDir()
	a, err := agent.New(cfg, agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := handlers.Register(a, handlers.Options{}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := a.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	s := a2asrv.New(a)
	p := auth.Principal{ID: "admin", Scopes: []auth.Scope{auth.ScopeAdmin}}
	call := func(op a2a.Op, params string) (map[string]any, error) {
		t.Helper()
		res, _, err := s.Call(ctx, p, op, a2a.V10, json.RawMessage(params), nil)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m, nil
	}
	res, err := call(a2a.OpSend, `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"data":{"n":1}}]}}`)
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	task, _ := res["task"].(map[string]any)
	id, _ := task["id"].(string)
	if st := task["status"].(map[string]any)["state"]; id == "" || st != "TASK_STATE_COMPLETED" {
		t.Fatalf("SendMessage = %v, want a completed task", res)
	}
	got, err := call(a2a.OpGet, `{"id":"`+id+`","historyLength":0}`)
	if err != nil || got["id"] != id || got["history"] != nil || got["artifacts"] == nil {
		t.Errorf("GetTask = %v, %v; want the task with its result and no history", got, err)
	}
	list, err := call(a2a.OpList, `{"pageSize":5}`)
	if err != nil || list["totalSize"] != float64(1) || len(list["tasks"].([]any)) != 1 {
		t.Errorf("ListTasks = %v, %v; want the one task", list, err)
	}
	var re *a2a.RPCError
	if _, err := call(a2a.OpCancel, `{"id":"`+id+`"}`); !errors.As(err, &re) || re.Code != a2a.CodeTaskNotCancelable {
		t.Errorf("CancelTask of a completed task: %v, want TaskNotCancelable", err)
	}
	if _, err := call(a2a.OpGet, `{"id":"nope"}`); a2a.ErrorFrom(err).Code != a2a.CodeTaskNotFound {
		t.Errorf("GetTask of an unknown task: %v, want TaskNotFound", err)
	}
	if _, err := call(a2a.OpSend, `{"message":{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"x"}],"metadata":{"task_type":"nope"}}}`); a2a.ErrorFrom(err).Code != a2a.CodeUnsupportedOperation {
		t.Errorf("SendMessage of an unknown type: %v, want UnsupportedOperation", err)
	}
	if _, err := call(a2a.OpGet, `[1]`); a2a.ErrorFrom(err).Code != a2a.CodeInvalidParams {
		t.Errorf("params that are no object: %v, want InvalidParams", err)
	}
}
