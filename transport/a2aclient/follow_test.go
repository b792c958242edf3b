package a2aclient

import (
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/a2a"
)

// TestDecodeStreamEvent: each kind of event a subscription carries (v1.0
// StreamResponse, v0.3 objects with their kind) leaves the task state it
// stands for; anything else is an error, never a state.
func TestDecodeStreamEvent(t *testing.T) {
	working := &a2a.Task{ID: "r1", ContextID: "c", Status: a2a.TaskStatus{State: "TASK_STATE_WORKING"},
		Artifacts: []a2a.Artifact{{ArtifactID: "a", Name: "old"}, {ArtifactID: "b"}}}
	for _, tt := range []struct {
		name    string
		data    string
		cur     *a2a.Task
		state   string
		arts    string // artifact ids and names
		rpcCode int
		err     string
	}{
		{"v1.0 task", `{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"r1","contextId":"c","status":{"state":"TASK_STATE_SUBMITTED"}}}}`, nil, "TASK_STATE_SUBMITTED", "", 0, ""},
		{"v1.0 status update", `{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"r1","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}}`, working, "TASK_STATE_COMPLETED", "a:old b:", 0, ""},
		{"status update first", `{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"r1","status":{"state":"TASK_STATE_WORKING"}}}}`, nil, "TASK_STATE_WORKING", "", 0, ""},
		{"v1.0 artifact replaced", `{"jsonrpc":"2.0","id":1,"result":{"artifactUpdate":{"taskId":"r1","artifact":{"artifactId":"a","name":"new","parts":[]}}}}`, working, "TASK_STATE_WORKING", "a:new b:", 0, ""},
		{"v1.0 artifact added", `{"jsonrpc":"2.0","id":1,"result":{"artifactUpdate":{"taskId":"r1","artifact":{"artifactId":"c","parts":[]}}}}`, working, "TASK_STATE_WORKING", "a:old b: c:", 0, ""},
		{"v0.3 task", `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"r1","contextId":"c","status":{"state":"working"}}}`, nil, "working", "", 0, ""},
		{"v0.3 status update", `{"jsonrpc":"2.0","id":1,"result":{"kind":"status-update","taskId":"r1","status":{"state":"completed"},"final":true}}`, working, "completed", "a:old b:", 0, ""},
		{"v0.3 artifact", `{"jsonrpc":"2.0","id":1,"result":{"kind":"artifact-update","taskId":"r1","artifact":{"artifactId":"z","parts":[]}}}`, working, "TASK_STATE_WORKING", "a:old b: z:", 0, ""},
		{"JSON-RPC error", `{"jsonrpc":"2.0","id":1,"error":{"code":-32004,"message":"not streamable"}}`, nil, "", "", -32004, ""},
		{"another task", `{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"r2","status":{"state":"TASK_STATE_COMPLETED"}}}}`, working, "", "", 0, `an event of task "r2"`},
		{"empty result", `{"jsonrpc":"2.0","id":1,"result":{}}`, working, "", "", 0, "neither a task nor an update"},
		{"no result", `{"jsonrpc":"2.0","id":1}`, working, "", "", 0, "decode an event"},
		{"result of a wrong type", `{"jsonrpc":"2.0","id":1,"result":{"task":[1,2]}}`, working, "", "", 0, "decode an event"},
		{"v0.3 kind with a wrong shape", `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","status":"done"}}`, working, "", "", 0, "decode a task event"},
		{"truncated", `{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"r1"`, working, "", "", 0, "no JSON-RPC response"},
		{"not JSON", `event: ping`, working, "", "", 0, "no JSON-RPC response"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var before []a2a.Artifact
			if tt.cur != nil {
				before = append(before, tt.cur.Artifacts...)
			}
			next, rpcErr, err := decodeStreamEvent([]byte(tt.data), "r1", tt.cur)
			switch {
			case tt.err != "":
				if err == nil || !strings.Contains(err.Error(), tt.err) || next != nil {
					t.Fatalf("got %+v, %v; want the error %q and no state", next, err, tt.err)
				}
				return
			case tt.rpcCode != 0:
				if rpcErr == nil || rpcErr.Code != tt.rpcCode || next != nil || err != nil {
					t.Fatalf("got %+v, %+v, %v; want the JSON-RPC error %d", next, rpcErr, err, tt.rpcCode)
				}
				return
			case err != nil || rpcErr != nil:
				t.Fatalf("error %v %+v", err, rpcErr)
			}
			if next.ID != "r1" || next.Status.State != tt.state {
				t.Errorf("task %s in %q, want r1 in %q", next.ID, next.Status.State, tt.state)
			}
			var arts []string
			for _, a := range next.Artifacts {
				arts = append(arts, a.ArtifactID+":"+a.Name)
			}
			if got := strings.Join(arts, " "); got != tt.arts {
				t.Errorf("artifacts %q, want %q", got, tt.arts)
			}
			if tt.cur != nil && len(tt.cur.Artifacts) != len(before) {
				t.Errorf("the current state was changed in place: %d artifacts, had %d", len(tt.cur.Artifacts), len(before))
			}
		})
	}
}

// FuzzDecodeStreamEvent: no event, however malformed, panics, and a state
// it leaves is always of the followed task.
func FuzzDecodeStreamEvent(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"r1","status":{"state":"TASK_STATE_SUBMITTED"}}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"r1","status":{"state":"TASK_STATE_COMPLETED"}}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"artifactUpdate":{"artifact":{"artifactId":"a","parts":[{"text":"x"}]}}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"kind":"status-update","status":{"state":"working"}}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"x","data":[{}]}}`,
	} {
		f.Add([]byte(s))
	}
	cur := &a2a.Task{ID: "r1", Status: a2a.TaskStatus{State: "TASK_STATE_WORKING"}, Artifacts: []a2a.Artifact{{ArtifactID: "a"}}}
	f.Fuzz(func(t *testing.T, data []byte) {
		next, rpcErr, err := decodeStreamEvent(data, "r1", cur)
		if next != nil && (err != nil || rpcErr != nil || next.ID != "r1") {
			t.Fatalf("state %+v with %v %+v", next, err, rpcErr)
		}
		if next == nil && err == nil && rpcErr == nil {
			t.Fatal("neither a state nor an error")
		}
		if len(cur.Artifacts) != 1 || cur.Artifacts[0].ArtifactID != "a" {
			t.Fatalf("the current state was changed: %+v", cur)
		}
	})
}
