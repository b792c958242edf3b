package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/synapse-edge/synapse/wire"
)

func TestEchoRoundTripJSON(t *testing.T) {
	ts := startServer(t)
	const payload = `{"msg":"héllo","n":[1,2.5,true,null],"nested":{"k":"v"}}`

	t.Run("submit and poll", func(t *testing.T) {
		r := ts.do(t, "POST", api("/task"), []byte(`{"task_type":"echo","payload":`+payload+`}`))
		r.wantStatus(t, http.StatusCreated)
		got := r.object(t)
		for _, k := range []string{"task_id", "status", "message"} {
			if s, _ := got[k].(string); s == "" {
				t.Errorf("201 answer field %q = %#v, want a non-empty string", k, got[k])
			}
		}
		if len(got) != 3 {
			t.Errorf("201 answer has keys %v, want task_id, status, message", keys(got))
		}
		id := got["task_id"].(string)
		if loc, want := r.header.Get("Location"), api("/task/"+id); loc != want {
			t.Errorf("Location = %q, want %q", loc, want)
		}
		done := ts.waitStatus(t, id, wire.StatusCompleted)
		res, _ := done["result_json"].(string)
		if !jsonEqual(t, res, payload) {
			t.Errorf("result_json = %s, want %s", res, payload)
		}
		if done["task_type"] != "echo" || done["progress"] != float64(100) {
			t.Errorf("task_type, progress = %v, %v; want echo, 100", done["task_type"], done["progress"])
		}
	})

	t.Run("wait returns the final state", func(t *testing.T) {
		r := ts.do(t, "POST", api("/task?wait=5"), []byte(`{"task_type":"echo","payload":`+payload+`}`))
		r.wantStatus(t, http.StatusOK)
		got := r.object(t)
		for _, k := range []string{"task_id", "task_type", "status", "progress", "result_json", "error_message", "created_at", "updated_at", "etag", "history", "payload"} {
			if _, ok := got[k]; !ok {
				t.Errorf("200 answer lacks %q: %s", k, r.body)
			}
		}
		if got["status"] != "completed" {
			t.Errorf("status = %v, want completed", got["status"])
		}
		if res, _ := got["result_json"].(string); !jsonEqual(t, res, payload) {
			t.Errorf("result_json = %s, want %s", res, payload)
		}
		if etag := r.header.Get("ETag"); etag == "" || etag != got["etag"] {
			t.Errorf("ETag header %q, body etag %v: want equal and set", etag, got["etag"])
		}
		var states []string
		for _, h := range got["history"].([]any) {
			states = append(states, h.(map[string]any)["status"].(string))
		}
		if want := []string{"pending", "confirmed", "executing", "completed"}; !slices.Equal(states, want) {
			t.Errorf("history states = %v, want %v", states, want)
		}
	})

	t.Run("payload_json string form", func(t *testing.T) {
		body, _ := json.Marshal(map[string]any{"task_type": "echo", "payload_json": payload})
		r := ts.do(t, "POST", api("/task?wait=5"), body)
		r.wantStatus(t, http.StatusOK)
		if res, _ := r.object(t)["result_json"].(string); !jsonEqual(t, res, payload) {
			t.Errorf("result_json = %s, want %s", res, payload)
		}
	})

	t.Run("wait over 60 is refused", func(t *testing.T) {
		r := ts.do(t, "POST", api("/task?wait=61"), []byte(`{"task_type":"echo","payload":{}}`))
		e := r.wantError(t, http.StatusBadRequest, wire.CodeInvalidParams)
		if d, _ := e["details"].(map[string]any); d["field"] != "wait" {
			t.Errorf("details = %v, want field wait", e["details"])
		}
	})
}

func TestEchoRoundTripMsgpack(t *testing.T) {
	ts := startServer(t)
	mp := []reqOpt{withHeader("Content-Type", "application/msgpack"), withHeader("Accept", "application/msgpack")}
	decode := func(t *testing.T, r *reply) map[string]any {
		t.Helper()
		if ct := r.header.Get("Content-Type"); ct != wire.ContentMsgpack {
			t.Errorf("Content-Type = %q, want %s", ct, wire.ContentMsgpack)
		}
		var m map[string]any
		if err := wire.Msgpack.Unmarshal(r.body, &m); err != nil {
			t.Fatalf("answer is not a msgpack map: %v (% x)", err, r.body)
		}
		return m
	}

	t.Run("hand-built request", func(t *testing.T) {
		// {"task_type":"echo","payload":{"a":1}}
		body := []byte{0x82,
			0xa9, 't', 'a', 's', 'k', '_', 't', 'y', 'p', 'e', 0xa4, 'e', 'c', 'h', 'o',
			0xa7, 'p', 'a', 'y', 'l', 'o', 'a', 'd', 0x81, 0xa1, 'a', 0x01}
		r := ts.do(t, "POST", api("/task"), body, mp...)
		r.wantStatus(t, http.StatusCreated)
		got := decode(t, r)
		id, _ := got["task_id"].(string)
		if id == "" || got["status"] == nil || got["message"] == nil {
			t.Fatalf("201 answer = %v, want task_id, status, message", got)
		}
		done := ts.waitStatus(t, id, wire.StatusCompleted)
		if res, _ := done["result_json"].(string); !jsonEqual(t, res, `{"a":1}`) {
			t.Errorf("result_json = %s, want {\"a\":1}", res)
		}
	})

	t.Run("wait answer in msgpack", func(t *testing.T) {
		body, err := wire.Msgpack.Marshal(map[string]any{
			"task_type": "echo",
			"payload":   map[string]any{"s": "x", "list": []any{1, "two"}, "f": 1.5},
		})
		if err != nil {
			t.Fatal(err)
		}
		r := ts.do(t, "POST", api("/task?wait=5"), body, mp...)
		r.wantStatus(t, http.StatusOK)
		got := decode(t, r)
		if got["status"] != "completed" || got["task_type"] != "echo" {
			t.Errorf("status, task_type = %v, %v; want completed, echo", got["status"], got["task_type"])
		}
		res, ok := got["result_json"].(string)
		if !ok || !jsonEqual(t, res, `{"s":"x","list":[1,"two"],"f":1.5}`) {
			t.Errorf("result_json = %#v, want the payload as a JSON string", got["result_json"])
		}
		if _, ok := got["payload"].(map[string]any); !ok {
			t.Errorf("payload = %#v, want a native msgpack map", got["payload"])
		}
		// result: the same value as native msgpack, as in JSON answers.
		if m, ok := got["result"].(map[string]any); !ok || m["s"] != "x" || m["f"] != 1.5 || len(m["list"].([]any)) != 2 {
			t.Errorf("result = %#v, want the payload as a native msgpack map", got["result"])
		}
		full := decode(t, ts.do(t, "GET", api("/task/"+got["task_id"].(string)), nil, mp...))
		if m, ok := full["result"].(map[string]any); !ok || m["s"] != "x" {
			t.Errorf("GET /task result = %#v, want a native msgpack map", full["result"])
		}
		status := decode(t, ts.do(t, "GET", api("/task/"+got["task_id"].(string)+"/status"), nil, mp...))
		if _, ok := status["result"]; ok {
			t.Errorf("GET /task/{id}/status carries result: %v", status)
		}
		if _, ok := got["history"].([]any); !ok {
			t.Errorf("history = %#v, want an array", got["history"])
		}
	})

	t.Run("errors in msgpack", func(t *testing.T) {
		r := ts.do(t, "GET", api("/task/no-such-task"), nil, mp...)
		r.wantStatus(t, http.StatusNotFound)
		got := decode(t, r)
		e, _ := got["error"].(map[string]any)
		if e["code"] != string(wire.CodeTaskNotFound) {
			t.Errorf("error = %v, want code task_not_found", got)
		}
	})
}

func TestTaskStatusRoute(t *testing.T) {
	ts := startServer(t)
	id := ts.submit(t, `{"task_type":"sleep","payload":{"ms":60000}}`)
	ts.waitStatus(t, id, wire.StatusExecuting)
	path := api("/task/" + id + "/status")

	r := ts.do(t, "GET", path, nil)
	r.wantStatus(t, http.StatusOK)
	etag := r.header.Get("ETag")
	if etag == "" {
		t.Fatalf("no ETag header")
	}
	got := r.object(t)
	for _, k := range []string{"payload", "history", "result"} {
		if _, ok := got[k]; ok {
			t.Errorf("status answer has %q: %s", k, r.body)
		}
	}
	if got["status"] != "executing" || got["etag"] != etag {
		t.Errorf("status, etag = %v, %v; want executing, %s", got["status"], got["etag"], etag)
	}

	t.Run("If-None-Match unchanged", func(t *testing.T) {
		r := ts.do(t, "GET", path, nil, withHeader("If-None-Match", etag))
		r.wantStatus(t, http.StatusNotModified)
		if len(r.body) != 0 {
			t.Errorf("304 has a body: %q", r.body)
		}
		r = ts.do(t, "GET", path, nil, withHeader("If-None-Match", `"other", `+etag))
		r.wantStatus(t, http.StatusNotModified)
	})

	ts.cancelTask(t, id)

	t.Run("If-None-Match after a change", func(t *testing.T) {
		r := ts.do(t, "GET", path, nil, withHeader("If-None-Match", etag))
		r.wantStatus(t, http.StatusOK)
		if n := r.header.Get("ETag"); n == "" || n == etag {
			t.Errorf("ETag after cancel = %q, want a new tag (old %s)", n, etag)
		}
		if got := r.object(t)["status"]; got != "cancelled" {
			t.Errorf("status = %v, want cancelled", got)
		}
	})

	t.Run("result not in status answer", func(t *testing.T) {
		done := ts.do(t, "POST", api("/task?wait=5"), []byte(`{"task_type":"echo","payload":{"secret":"r"}}`))
		done.wantStatus(t, http.StatusOK)
		eid := done.object(t)["task_id"].(string)
		r := ts.do(t, "GET", api("/task/"+eid+"/status"), nil)
		r.wantStatus(t, http.StatusOK)
		got := r.object(t)
		if got["status"] != "completed" {
			t.Errorf("status = %v, want completed", got["status"])
		}
		if bytes.Contains(r.body, []byte("secret")) {
			t.Errorf("status answer carries the payload or result: %s", r.body)
		}
		if res, ok := got["result_json"]; ok && res != "" {
			t.Errorf("result_json = %v, want it left out", res)
		}
	})

	t.Run("unknown task", func(t *testing.T) {
		for _, p := range []string{"/task/nope", "/task/nope/status"} {
			ts.do(t, "GET", api(p), nil).wantError(t, http.StatusNotFound, wire.CodeTaskNotFound)
		}
	})
}

func TestListTasks(t *testing.T) {
	ts := startServer(t)
	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, ts.submit(t, `{"task_type":"echo","payload":{"i":1}}`))
	}
	newestFirst := slices.Clone(ids)
	slices.Reverse(newestFirst)

	t.Run("pages of two", func(t *testing.T) {
		got := ts.listIDs(t, "page_size=2")
		if !slices.Equal(got, newestFirst) {
			t.Errorf("ids = %v, want %v", got, newestFirst)
		}
	})

	t.Run("first page", func(t *testing.T) {
		r := ts.do(t, "GET", api("/tasks?page_size=2"), nil)
		r.wantStatus(t, http.StatusOK)
		m := r.object(t)
		if n := len(m["tasks"].([]any)); n != 2 {
			t.Errorf("first page has %d tasks, want 2", n)
		}
		if m["next_page_token"] == "" {
			t.Errorf("first page has no next_page_token")
		}
		for _, x := range m["tasks"].([]any) {
			if _, ok := x.(map[string]any)["history"]; ok {
				t.Errorf("list entries carry history")
			}
		}
	})

	t.Run("filters", func(t *testing.T) {
		for _, id := range ids {
			ts.waitStatus(t, id, wire.StatusCompleted)
		}
		if got := ts.listIDs(t, "status=completed&task_type=echo&page_size=3"); !slices.Equal(got, newestFirst) {
			t.Errorf("completed echo ids = %v, want %v", got, newestFirst)
		}
		if got := ts.listIDs(t, "status=failed"); len(got) != 0 {
			t.Errorf("failed ids = %v, want none", got)
		}
		if got := ts.listIDs(t, "task_type=sleep"); len(got) != 0 {
			t.Errorf("sleep ids = %v, want none", got)
		}
	})

	t.Run("bad parameters", func(t *testing.T) {
		for _, q := range []string{"status=bogus", "page_size=0", "page_size=x", "page_size=501"} {
			t.Run(q, func(t *testing.T) {
				ts.do(t, "GET", api("/tasks?"+q), nil).wantError(t, http.StatusBadRequest, wire.CodeInvalidParams)
			})
		}
	})
}

func TestCancel(t *testing.T) {
	ts := startServer(t)
	id := ts.submit(t, `{"task_type":"sleep","payload":{"ms":60000}}`)
	ts.waitStatus(t, id, wire.StatusExecuting)

	t.Run("running", func(t *testing.T) { ts.cancelTask(t, id) })
	t.Run("again is idempotent", func(t *testing.T) { ts.cancelTask(t, id) })
	t.Run("stored as cancelled", func(t *testing.T) {
		if got := ts.task(t, id)["status"]; got != "cancelled" {
			t.Errorf("status = %v, want cancelled", got)
		}
	})
	t.Run("completed task", func(t *testing.T) {
		r := ts.do(t, "POST", api("/task?wait=5"), []byte(`{"task_type":"echo","payload":{}}`))
		r.wantStatus(t, http.StatusOK)
		done := r.object(t)["task_id"].(string)
		e := ts.do(t, "POST", api("/task/"+done+"/cancel"), nil).wantError(t, http.StatusConflict, wire.CodeTaskAlreadyCompleted)
		if e["retriable"] != false {
			t.Errorf("retriable = %v, want false", e["retriable"])
		}
	})
	t.Run("unknown task", func(t *testing.T) {
		ts.do(t, "POST", api("/task/nope/cancel"), nil).wantError(t, http.StatusNotFound, wire.CodeTaskNotFound)
	})
}

func TestInfoNeeded(t *testing.T) {
	ts := startServer(t)
	r := ts.do(t, "POST", api("/task"), []byte(`{"task_type":"sleep","payload":{}}`))
	r.wantStatus(t, http.StatusCreated)
	sub := r.object(t)
	if sub["status"] != "info_needed" {
		t.Fatalf("status = %v, want info_needed", sub["status"])
	}
	id := sub["task_id"].(string)

	got := ts.task(t, id)
	mf, _ := got["missing_fields"].([]any)
	if len(mf) != 1 || mf[0].(map[string]any)["field"] != "ms" {
		t.Fatalf("missing_fields = %v, want one entry for ms", got["missing_fields"])
	}

	t.Run("fields refused", func(t *testing.T) {
		for _, body := range []string{`{}`, `{"fields":null}`, `{"fields":[1]}`, `{"fields":"ms"}`} {
			ts.do(t, "POST", api("/task/"+id+"/info"), []byte(body)).wantError(t, http.StatusBadRequest, wire.CodeInvalidParams)
		}
		if got := ts.task(t, id)["status"]; got != "info_needed" {
			t.Errorf("status after refused info = %v, want info_needed", got)
		}
	})

	t.Run("provide and run", func(t *testing.T) {
		r := ts.do(t, "POST", api("/task/"+id+"/info"), []byte(`{"fields":{"ms":10}}`))
		r.wantStatus(t, http.StatusOK)
		done := ts.waitStatus(t, id, wire.StatusCompleted)
		if res, _ := done["result_json"].(string); !jsonEqual(t, res, `{"slept_ms":10}`) {
			t.Errorf("result_json = %s, want {\"slept_ms\":10}", res)
		}
		if _, ok := done["missing_fields"]; ok {
			t.Errorf("completed task still lists missing_fields: %v", done["missing_fields"])
		}
	})

	t.Run("not waiting for info", func(t *testing.T) {
		ts.do(t, "POST", api("/task/"+id+"/info"), []byte(`{"fields":{"ms":10}}`)).
			wantError(t, http.StatusConflict, wire.CodeInvalidStateChange)
	})
}
