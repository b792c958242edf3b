package taskpeek

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// agrees checks Status against encoding/json: when it answers, it
// answers what a full decode reads.
func agrees(t *testing.T, raw []byte) {
	st, ok := Status(raw)
	if !ok {
		return
	}
	var v struct {
		Status *string `json:"status"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("Status(%q) = %q, ok, but the record does not decode: %v", raw, st, err)
	}
	if v.Status == nil || *v.Status != st {
		t.Fatalf("Status(%q) = %q, the decoded status is %v", raw, st, v.Status)
	}
}

func TestStatusOfStoredTasks(t *testing.T) {
	now := time.Now()
	for _, st := range []wire.Status{wire.StatusCompleted, wire.StatusExecuting, wire.StatusConfirmed, wire.StatusFailed} {
		task := &wire.Task{ID: "019a-x", Type: `odd"type{[`, Status: st, Payload: wire.JSONValue(`{"status":"completed"}`), History: []wire.Transition{{From: wire.StatusIdle, Status: wire.StatusCompleted}}, CreatedAt: now, UpdatedAt: now}
		raw, err := wire.AppendTaskJSON(nil, task, true)
		if err != nil {
			t.Fatal(err)
		}
		// A type with a brace: not certain, so not ok.
		if _, ok := Status(raw); ok {
			t.Errorf("Status of a record whose type holds a brace: ok")
		}
		task.Type = "echo"
		raw, _ = wire.AppendTaskJSON(nil, task, true)
		if got, ok := Status(raw); !ok || got != string(st) {
			t.Errorf("Status = %q, %v; want %q", got, ok, st)
		}
		agrees(t, raw)
	}
}

func TestStatusHostile(t *testing.T) {
	for _, raw := range []string{
		``, `{`, `[]`, `{"status":"`, `{"status":"x\"y"}`, `{"a":{"status":"completed"},"status":"executing"}`,
		`{"a":["x"],"status":"completed"}`, `{"note":"\"status\":\"completed\"","status":"executing"}`,
		`{"a":1 "status":"completed"}`, `{x"status":"completed"}`, `{"status":"completed"}`,
	} {
		agreesOrRefuses(t, []byte(raw))
	}
}

// agreesOrRefuses is agrees for input that may not be JSON: an answer
// for invalid JSON is allowed only where a full decode would fail too
// (the caller then decodes it and reports the error).
func agreesOrRefuses(t *testing.T, raw []byte) {
	if _, ok := Status(raw); ok && json.Valid(raw) && topLevel(raw, "status") == 1 {
		agrees(t, raw)
	}
}

// topLevel counts the members named key of the JSON object raw.
func topLevel(raw []byte, key string) int {
	dec := json.NewDecoder(bytes.NewReader(raw))
	n, depth, isKey := 0, 0, false
	for {
		tok, err := dec.Token()
		if err != nil {
			return n
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				depth++
				isKey = v == '{' && depth == 1
			} else {
				depth--
				isKey = depth == 1
			}
			continue
		case string:
			if depth == 1 && isKey && v == key {
				n++
			}
		}
		if depth == 1 {
			isKey = !isKey
		}
	}
}

func FuzzStatus(f *testing.F) {
	f.Add([]byte(`{"task_id":"a","task_type":"echo","status":"completed","payload":{"status":"x"}}`))
	f.Add([]byte(`{"a":{"status":"completed"},"status":"executing"}`))
	f.Add([]byte(`{"note":"\"status\":\"completed\"","status":"executing"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		agreesOrRefuses(t, raw)
	})
}
