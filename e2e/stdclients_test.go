package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// Standard clients that someone else wrote, run with node against the
// agent: the WHATWG EventSource of npm eventsource and npm
// @msgpack/msgpack, pinned in stdclients/package.json and its lock file
// (scripts/ci-deps.sh installs them with npm ci).

// stdClients returns node, with the pinned packages installed in
// stdclients/node_modules. Without them the test is skipped, except in CI,
// where it fails.
func stdClients(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		for _, pkg := range []string{"eventsource", filepath.Join("@msgpack", "msgpack")} {
			if _, err = os.Stat(filepath.Join("stdclients", "node_modules", pkg, "package.json")); err != nil {
				break
			}
		}
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the standard clients need node and stdclients/node_modules (scripts/ci-deps.sh): %v", err)
		}
		t.Skipf("the standard clients need node and stdclients/node_modules (scripts/ci-deps.sh --install, or npm ci in e2e/stdclients): %v", err)
	}
	return node
}

// runNode runs a script of stdclients/ and decodes the JSON line it prints
// into out.
func runNode(t *testing.T, node, script string, out any, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Dir = "stdclients"
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.Bytes())
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("node %s printed %q: %v\n%s", script, b, err, stderr.Bytes())
	}
}

// TestEventSourceStops: a standard EventSource gets a task's events once
// and stops after its last one (the reconnect is answered 204), for a
// task that finished before it connected and for one that finishes while
// it listens. Before, every reconnect got 200 and an empty stream, and the
// client came back every 3 s forever.
func TestEventSourceStops(t *testing.T) {
	node := stdClients(t)
	a := startAgent(t, agentOpts{})
	for _, tt := range []struct{ name, body string }{
		{"finished task", `{"task_type":"echo","payload":{"x":1}}`},
		{"live task", `{"task_type":"sleep","payload":{"ms":1500}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := prefix + "/task"
			if tt.name == "finished task" {
				path += "?wait=10"
			}
			r := a.call(http.MethodPost, path, []byte(tt.body))
			var sr struct {
				TaskID string `json:"task_id"`
				Status string `json:"status"`
			}
			if json.Unmarshal(r.body, &sr) != nil || sr.TaskID == "" || (tt.name == "finished task") != (sr.Status == "completed") {
				t.Fatalf("POST %s: %s", path, r)
			}
			var got struct {
				Opens  int `json:"opens"`
				Events []struct {
					Type string         `json:"type"`
					ID   string         `json:"id"`
					Data map[string]any `json:"data"`
				} `json:"events"`
				Stopped bool `json:"stopped"`
			}
			// The client reconnects 3 s after the stream ends (its default);
			// 30 s is ten reconnects.
			runNode(t, node, "eventsource.mjs", &got, a.url()+prefix+"/task/"+sr.TaskID+"/stream", a.token, "30000")
			if !got.Stopped {
				t.Fatalf("the EventSource did not stop within 30 s: opened %d times, %d events", got.Opens, len(got.Events))
			}
			if got.Opens != 1 || len(got.Events) == 0 {
				t.Fatalf("opened %d times with %d events, want once with the task's events", got.Opens, len(got.Events))
			}
			for i, e := range got.Events {
				if e.ID != strconv.Itoa(i+1) || e.Data["task_id"] != sr.TaskID {
					t.Errorf("event %d = %s id %s of %v, want id %d of %s, each once", i, e.Type, e.ID, e.Data["task_id"], i+1, sr.TaskID)
				}
			}
			if last := got.Events[len(got.Events)-1]; last.Type != "complete" || last.Data["status"] != "completed" {
				t.Errorf("last event %s %v, want complete, completed", last.Type, last.Data)
			}
		})
	}
}

// TestMsgpackClientReadsResult: a standard msgpack library reads `result`
// from msgpack answers as a native value equal to what JSON answers
// carry (here the echoed payload), beside result_json.
func TestMsgpackClientReadsResult(t *testing.T) {
	node := stdClients(t)
	a := startAgent(t, agentOpts{})
	type answer struct {
		Status      int            `json:"status"`
		ContentType string         `json:"content_type"`
		Body        map[string]any `json:"body"`
	}
	var got struct {
		Payload    map[string]any `json:"payload"`
		Submitted  answer         `json:"submitted"`
		Got        answer         `json:"got"`
		ResultType []string       `json:"result_type"`
	}
	runNode(t, node, "msgpack.mjs", &got, a.url()+prefix, a.token)
	if got.Submitted.Status != http.StatusOK || got.Got.Status != http.StatusOK {
		t.Fatalf("answers %d, %d, want 200: %+v", got.Submitted.Status, got.Got.Status, got)
	}
	for i, ans := range []answer{got.Submitted, got.Got} {
		if ans.ContentType != "application/msgpack" || ans.Body["status"] != "completed" {
			t.Errorf("answer %d: %s, status %v; want application/msgpack, completed", i, ans.ContentType, ans.Body["status"])
		}
		if got.ResultType[i] != "object" || !reflect.DeepEqual(ans.Body["result"], got.Payload) {
			t.Errorf("answer %d: result (%s) %v, want the payload %v as a native map", i, got.ResultType[i], ans.Body["result"], got.Payload)
		}
		var fromText any
		if s, ok := ans.Body["result_json"].(string); !ok || json.Unmarshal([]byte(s), &fromText) != nil || !reflect.DeepEqual(fromText, got.Payload) {
			t.Errorf("answer %d: result_json %v, want the payload as JSON text", i, ans.Body["result_json"])
		}
	}
	// The JSON answer carries the same result.
	r := a.call(http.MethodGet, prefix+"/task/"+got.Submitted.Body["task_id"].(string), nil)
	var js struct {
		Result map[string]any `json:"result"`
	}
	if json.Unmarshal(r.body, &js) != nil || !reflect.DeepEqual(js.Result, got.Got.Body["result"]) {
		t.Errorf("JSON result %v, msgpack result %v", js.Result, got.Got.Body["result"])
	}
}
