package a2a_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/a2a"
	"github.com/synapse-edge/synapse/wire"
)

func TestState(t *testing.T) {
	for _, c := range []struct {
		ours     wire.Status
		v03, v10 string
	}{
		{wire.StatusPending, "submitted", "TASK_STATE_SUBMITTED"},
		{wire.StatusConfirmed, "submitted", "TASK_STATE_SUBMITTED"},
		{wire.StatusExecuting, "working", "TASK_STATE_WORKING"},
		{wire.StatusInfoNeeded, "input-required", "TASK_STATE_INPUT_REQUIRED"},
		{wire.StatusNeedHuman, "input-required", "TASK_STATE_INPUT_REQUIRED"},
		{wire.StatusCompleted, "completed", "TASK_STATE_COMPLETED"},
		{wire.StatusFailed, "failed", "TASK_STATE_FAILED"},
		{wire.StatusCancelled, "canceled", "TASK_STATE_CANCELED"},
		{wire.StatusRejected, "rejected", "TASK_STATE_REJECTED"},
	} {
		t.Run(string(c.ours), func(t *testing.T) {
			if got := a2a.State(c.ours, a2a.V03); got != c.v03 {
				t.Errorf("v0.3 = %s, want %s", got, c.v03)
			}
			if got := a2a.State(c.ours, a2a.V10); got != c.v10 {
				t.Errorf("v1.0 = %s, want %s", got, c.v10)
			}
		})
	}
	t.Run("every state maps and back", func(t *testing.T) {
		for _, s := range wire.AllStatuses {
			back, ok := a2a.Statuses(a2a.State(s, a2a.V10))
			if !ok || !contains(back, s) {
				t.Errorf("%s → %s → %v", s, a2a.State(s, a2a.V10), back)
			}
		}
	})
	t.Run("filters", func(t *testing.T) {
		for in, want := range map[string]string{
			"submitted":                 "[idle pending confirmed]",
			"TASK_STATE_INPUT_REQUIRED": "[info_needed need_human human_deciding]",
			"auth-required":             "[]",
		} {
			got, ok := a2a.Statuses(in)
			if !ok || fmt.Sprint(got) != want {
				t.Errorf("Statuses(%s) = %v %v, want %s", in, got, ok, want)
			}
		}
		if _, ok := a2a.Statuses("sleeping"); ok {
			t.Error("Statuses(sleeping) ok, want refused")
		}
	})
}

func contains(ss []wire.Status, s wire.Status) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestSubmission(t *testing.T) {
	str := func(s string) *string { return &s }
	for _, c := range []struct {
		name     string
		m        *a2a.Message
		taskType string
		payload  string
		code     int
	}{
		{"text", &a2a.Message{Parts: []a2a.Part{{Text: str("a")}, {Kind: "text", Text: str("b")}}}, "echo", `{"text":"a\nb"}`, 0},
		{"data", &a2a.Message{Parts: []a2a.Part{{Data: json.RawMessage(`{"x":1}`)}, {Data: json.RawMessage(`{"y":2}`)}},
			Metadata: map[string]any{"task_type": "sleep"}}, "sleep", `{"x":1}`, 0},
		{"data and text", &a2a.Message{Parts: []a2a.Part{{Kind: "data", Data: json.RawMessage(`{"x":1}`)}, {Text: str("t")}}}, "echo", `{"x":1,"text":"t"}`, 0},
		{"no message", nil, "", "", a2a.CodeInvalidParams},
		{"no parts", &a2a.Message{}, "", "", a2a.CodeInvalidParams},
		{"data not an object", &a2a.Message{Parts: []a2a.Part{{Data: json.RawMessage(`[1]`)}}}, "", "", a2a.CodeInvalidParams},
		{"file", &a2a.Message{Parts: []a2a.Part{{Kind: "file", File: json.RawMessage(`{}`)}}}, "", "", a2a.CodeContentTypeNotSupported},
		{"v1 url part", &a2a.Message{Parts: []a2a.Part{{URL: json.RawMessage(`"x"`)}}}, "", "", a2a.CodeContentTypeNotSupported},
		{"bad task_type", &a2a.Message{Parts: []a2a.Part{{Text: str("a")}}, Metadata: map[string]any{"task_type": 3}}, "", "", a2a.CodeInvalidParams},
	} {
		t.Run(c.name, func(t *testing.T) {
			tt, p, err := a2a.Submission(c.m)
			if c.code != 0 {
				var re *a2a.RPCError
				if !errors.As(err, &re) || re.Code != c.code {
					t.Fatalf("err = %v, want code %d", err, c.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt != c.taskType || !jsonSame(t, string(p), c.payload) {
				t.Errorf("got %s %s, want %s %s", tt, p, c.taskType, c.payload)
			}
		})
	}
}

func jsonSame(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}

func TestErrorFrom(t *testing.T) {
	for code, want := range map[wire.ErrorCode]int{
		wire.CodeTaskNotFound:         a2a.CodeTaskNotFound,
		wire.CodeTaskAlreadyCompleted: a2a.CodeTaskNotCancelable,
		wire.CodeCapabilityLacking:    a2a.CodeUnsupportedOperation,
		wire.CodeUnsupportedMedia:     a2a.CodeContentTypeNotSupported,
		wire.CodeInvalidParams:        a2a.CodeInvalidParams,
		wire.CodeRateLimited:          a2a.CodeInternal,
	} {
		t.Run(string(code), func(t *testing.T) {
			e := a2a.ErrorFrom(fmt.Errorf("op: %w", wire.Errorf(code, "m")))
			if e.Code != want {
				t.Errorf("code = %d, want %d", e.Code, want)
			}
			if e.Agent == nil || e.Agent.Code != code {
				t.Errorf("agent error = %v, want the TPError", e.Agent)
			}
			b, _ := json.Marshal(e.WithDetails(time.Time{}))
			var got struct {
				Data []map[string]any `json:"data"`
			}
			if err := json.Unmarshal(b, &got); err != nil || len(got.Data) != 2 ||
				got.Data[0]["@type"] != a2a.TypeStruct || got.Data[0]["code"] != string(code) ||
				got.Data[1]["@type"] != a2a.TypeErrorInfo || got.Data[1]["domain"] != a2a.Domain || got.Data[1]["reason"] == "" {
				t.Errorf("error %s, want a Struct with the TPError and an A2A ErrorInfo", b)
			}
		})
	}
	t.Run("plain error hides its cause", func(t *testing.T) {
		e := a2a.ErrorFrom(errors.New("disk on fire"))
		if e.Code != a2a.CodeInternal || e.Message != "internal error" {
			t.Errorf("got %+v", e)
		}
	})
}

func TestMethod(t *testing.T) {
	for name, want := range map[string]a2a.Op{
		"SendMessage": a2a.OpSend, "message/send": a2a.OpSend, "tasks/resubscribe": a2a.OpSubscribe,
		"ListTasks": a2a.OpList, "tasks/pushNotificationConfig/delete": a2a.OpPushDelete,
	} {
		if op, _, ok := a2a.Method(name); !ok || op != want {
			t.Errorf("Method(%s) = %v %v, want %v", name, op, ok, want)
		}
	}
	if _, _, ok := a2a.Method("message/explode"); ok {
		t.Error("unknown method accepted")
	}
}

func TestFromTask(t *testing.T) {
	tk := &wire.Task{ID: "t1", Type: "echo", Status: wire.StatusCompleted, Payload: wire.JSONValue(`{"a":1}`), Result: wire.JSONValue(`[1,2]`)}
	t.Run("v0.3", func(t *testing.T) {
		b, _ := json.Marshal(a2a.FromTask(tk, a2a.V03, new(int)))
		want := `{"kind":"task","id":"t1","contextId":"t1","status":{"state":"completed","timestamp":"0001-01-01T00:00:00.000Z"},` +
			`"artifacts":[{"artifactId":"result","name":"result","parts":[{"kind":"data","data":{"value":[1,2]}}]}],"metadata":{"task_type":"echo"}}`
		if string(b) != want {
			t.Errorf("got  %s\nwant %s", b, want)
		}
	})
	t.Run("v1.0 failed", func(t *testing.T) {
		f := *tk
		f.Status, f.Result, f.ErrorCode, f.ErrorMessage = wire.StatusFailed, nil, "execution_failed", "boom"
		got := a2a.FromTask(&f, a2a.V10, nil)
		if got.Status.State != "TASK_STATE_FAILED" || got.Status.Message == nil || *got.Status.Message.Parts[0].Text != "boom" ||
			got.Status.Message.Role != "ROLE_AGENT" || len(got.Artifacts) != 0 || len(got.History) != 1 {
			t.Errorf("got %+v", got)
		}
	})
}

// TestResponseEncode: known answers of the response encoding (the bytes
// json.Marshal gives too), v1.0 results wrapped by kind.
func TestResponseEncode(t *testing.T) {
	tk := &a2a.Task{ID: "t", ContextID: "t", Status: a2a.TaskStatus{State: "TASK_STATE_COMPLETED"}}
	for _, tt := range []struct {
		name string
		r    *a2a.Response
		want string
	}{
		{"v1.0 task", a2a.NewResponse(json.RawMessage(`7`), a2a.Wrap(tk, a2a.V10)),
			`{"jsonrpc":"2.0","id":7,"result":{"task":{"id":"t","contextId":"t","status":{"state":"TASK_STATE_COMPLETED"}}}}`},
		{"v0.3 task, string id", a2a.NewResponse(json.RawMessage(`"a"`), a2a.Wrap(tk, a2a.V03)),
			`{"jsonrpc":"2.0","id":"a","result":{"id":"t","contextId":"t","status":{"state":"TASK_STATE_COMPLETED"}}}`},
		{"status update", a2a.NewResponse(nil, a2a.Wrap(&a2a.StatusUpdate{TaskID: "t", ContextID: "t"}, a2a.V10)),
			`{"jsonrpc":"2.0","id":null,"result":{"statusUpdate":{"taskId":"t","contextId":"t","status":{"state":""}}}}`},
		{"empty result", a2a.NewResponse(json.RawMessage(`1`), nil), `{"jsonrpc":"2.0","id":1,"result":null}`},
		{"error", a2a.NewErrorResponse(json.RawMessage(`1`), a2a.Errorf(a2a.CodeTaskNotFound, "no task")),
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"no task"}}`},
	} {
		got, err := tt.r.Encode()
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: Encode = %s, %v\nwant %s", tt.name, got, err, tt.want)
		}
		viaJSON, err := json.Marshal(tt.r)
		if err != nil || string(viaJSON) != tt.want {
			t.Errorf("%s: json.Marshal = %s, %v", tt.name, viaJSON, err)
		}
	}
	if _, err := a2a.NewResponse(json.RawMessage(`{bad`), nil).Encode(); err == nil {
		t.Error("an id that is no JSON encoded")
	}
}
