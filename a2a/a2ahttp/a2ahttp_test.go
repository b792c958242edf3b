package a2ahttp_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/internal/testutil"
)

// The A2A binding driven by a raw JSON-RPC 2.0 client over net/http, as
// the A2A v0.3 and v1.0 specifications describe the wire.

var rpcSeq atomic.Int64

// rpcReply is a decoded JSON-RPC response.
type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func rpcBody(t *testing.T, method string, params any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": rpcSeq.Add(1), "method": method, "params": params})
	if err != nil {
		t.Fatalf("encode request: %v", err)
	}
	return b
}

// rpc calls method and returns the response.
func (ts *testServer) rpc(t *testing.T, method string, params any) *rpcReply {
	t.Helper()
	r := ts.do(t, "POST", "/a2a", rpcBody(t, method, params))
	if r.status != http.StatusOK {
		t.Fatalf("%s: HTTP %d %s", method, r.status, r.body)
	}
	body := r.body
	if ct := r.header.Get("Content-Type"); strings.HasPrefix(ct, "text/event-stream") {
		// A streaming method's error is the stream's one event.
		d, ok := bytes.CutPrefix(bytes.TrimSpace(body), []byte("data: "))
		if !ok || bytes.Contains(d, []byte("\ndata:")) {
			t.Fatalf("%s: stream %q, want one data event", method, body)
		}
		body = d
	}
	var rep rpcReply
	if err := json.Unmarshal(body, &rep); err != nil {
		t.Fatalf("%s: answer is not JSON-RPC: %v\n%s", method, err, body)
	}
	if rep.Error != nil {
		checkErrorData(t, method, rep.Error.Data)
	}
	return &rep
}

// checkErrorData checks an error's data: a list of typed details ending
// in an A2A ErrorInfo.
func checkErrorData(t *testing.T, method string, data json.RawMessage) {
	t.Helper()
	var details []map[string]any
	if err := json.Unmarshal(data, &details); err != nil || len(details) == 0 {
		t.Fatalf("%s: error data %s, want a list of typed details", method, data)
	}
	last := details[len(details)-1]
	if last["@type"] != "type.googleapis.com/google.rpc.ErrorInfo" || last["domain"] != "a2a-protocol.org" || last["reason"] == "" {
		t.Errorf("%s: last detail %v, want an A2A ErrorInfo", method, last)
	}
}

// ok calls method, fails on a JSON-RPC error and decodes the result into v.
func (ts *testServer) ok(t *testing.T, method string, params, v any) {
	t.Helper()
	rep := ts.rpc(t, method, params)
	if rep.Error != nil {
		t.Fatalf("%s: error %d %s", method, rep.Error.Code, rep.Error.Message)
	}
	if v != nil {
		if err := json.Unmarshal(rep.Result, v); err != nil {
			t.Fatalf("%s: result: %v\n%s", method, err, rep.Result)
		}
	}
}

// wantRPCError checks that method fails with code.
func (ts *testServer) wantRPCError(t *testing.T, method string, params any, code int) {
	t.Helper()
	rep := ts.rpc(t, method, params)
	if rep.Error == nil {
		t.Fatalf("%s: result %s, want error %d", method, rep.Result, code)
	}
	if rep.Error.Code != code {
		t.Errorf("%s: error %d (%s), want %d", method, rep.Error.Code, rep.Error.Message, code)
	}
}

type a2aPart struct {
	Kind string          `json:"kind"`
	Text string          `json:"text"`
	Data json.RawMessage `json:"data"`
}

type a2aTask struct {
	Kind      string `json:"kind"`
	ID        string `json:"id"`
	ContextID string `json:"contextId"`
	Status    struct {
		State string `json:"state"`
	} `json:"status"`
	Artifacts []struct {
		ArtifactID string    `json:"artifactId"`
		Parts      []a2aPart `json:"parts"`
	} `json:"artifacts"`
}

// resultData is the data of the task's result artifact.
func (tk *a2aTask) resultData(t *testing.T) string {
	t.Helper()
	if len(tk.Artifacts) != 1 || len(tk.Artifacts[0].Parts) != 1 {
		t.Fatalf("task %s has artifacts %+v, want one with one part", tk.ID, tk.Artifacts)
	}
	return string(tk.Artifacts[0].Parts[0].Data)
}

// msg builds a message; v03 adds kinds.
func msg(v03 bool, taskType string, parts ...map[string]any) map[string]any {
	m := map[string]any{"messageId": fmt.Sprintf("m-%d", rpcSeq.Add(1)), "role": "ROLE_USER", "parts": parts}
	if v03 {
		m["role"], m["kind"] = "user", "message"
		for _, p := range parts {
			if _, ok := p["text"]; ok {
				p["kind"] = "text"
			} else if _, ok := p["data"]; ok {
				p["kind"] = "data"
			}
		}
	}
	if taskType != "" {
		m["metadata"] = map[string]any{"task_type": taskType}
	}
	return m
}

func text(s string) map[string]any { return map[string]any{"text": s} }
func data(v any) map[string]any    { return map[string]any{"data": v} }

func TestA2AAgentCard(t *testing.T) {
	ts := startServer(t)
	r := ts.do(t, "GET", "/.well-known/agent-card.json", nil, withToken(""))
	r.wantStatus(t, http.StatusOK)
	var card struct {
		URL                 *string `json:"url"`
		PreferredTransport  *string `json:"preferredTransport"`
		ProtocolVersion     *string `json:"protocolVersion"`
		SupportedInterfaces []struct {
			URL, ProtocolBinding, ProtocolVersion string
		} `json:"supportedInterfaces"`
		Capabilities struct {
			Streaming, PushNotifications bool
		} `json:"capabilities"`
		SecuritySchemes map[string]struct {
			HTTPAuth struct{ Scheme string } `json:"httpAuthSecurityScheme"`
		} `json:"securitySchemes"`
		Security             []map[string][]string `json:"security"`
		SecurityRequirements []struct {
			Schemes map[string][]string `json:"schemes"`
		} `json:"securityRequirements"`
		Skills []struct{ ID string } `json:"skills"`
	}
	if err := json.Unmarshal(r.body, &card); err != nil {
		t.Fatalf("card: %v\n%s", err, r.body)
	}
	t.Run("interfaces", func(t *testing.T) {
		if card.URL != nil || card.PreferredTransport != nil || card.ProtocolVersion != nil {
			t.Errorf("the v1.0 card has v0.3 top-level fields: %s", r.body)
		}
		var bindings []string
		for _, i := range card.SupportedInterfaces {
			bindings = append(bindings, i.ProtocolBinding+" "+i.ProtocolVersion+" "+strings.TrimPrefix(i.URL, ts.base))
		}
		want := []string{"JSONRPC 1.0 /a2a", "JSONRPC 0.3 /a2a", "SYNAPSE 1 /api/v1/synapse"}
		if fmt.Sprint(bindings) != fmt.Sprint(want) {
			t.Errorf("supportedInterfaces = %v, want %v", bindings, want)
		}
		if !card.Capabilities.Streaming || !card.Capabilities.PushNotifications {
			t.Errorf("capabilities = %+v, want streaming and push", card.Capabilities)
		}
	})
	t.Run("bearer declared and enforced", func(t *testing.T) {
		if s := card.SecuritySchemes["bearer"]; s.HTTPAuth.Scheme != "Bearer" {
			t.Errorf("securitySchemes.bearer = %+v", s)
		}
		if len(card.SecurityRequirements) != 1 || card.SecurityRequirements[0].Schemes["bearer"] == nil || card.Security != nil {
			t.Errorf("securityRequirements = %v, security = %v, want bearer required in v1.0 form only", card.SecurityRequirements, card.Security)
		}
		body := rpcBody(t, "GetTask", map[string]any{"id": "x"})
		for _, tok := range []string{"", "wrong"} {
			r := ts.do(t, "POST", "/a2a", body, withToken(tok))
			r.wantStatus(t, http.StatusUnauthorized)
			var rep rpcReply
			if err := json.Unmarshal(r.body, &rep); err != nil || rep.Error == nil || rep.Error.Code != -31401 {
				t.Errorf("token %q: body %s, want a JSON-RPC error -31401", tok, r.body)
			}
		}
	})
	t.Run("skills are the task types", func(t *testing.T) {
		var ids []string
		for _, s := range card.Skills {
			ids = append(ids, s.ID)
		}
		var want []string
		for _, tt := range ts.a.Capabilities().SupportedTaskTypes {
			want = append(want, tt.Type)
		}
		if got := fmt.Sprint(ids); got != fmt.Sprint(want) || !strings.Contains(got, "echo") {
			t.Errorf("skills = %s, want %s", got, want)
		}
	})
}

func TestA2ASend(t *testing.T) {
	ts := startServer(t)
	t.Run("v1.0 blocking text", func(t *testing.T) {
		var res struct{ Task a2aTask }
		ts.ok(t, "SendMessage", map[string]any{"message": msg(false, "", text("hello"))}, &res)
		if got, want := res.Task.Status.State, "TASK_STATE_COMPLETED"; got != want {
			t.Fatalf("state = %s, want %s", got, want)
		}
		if got := res.Task.resultData(t); !jsonEqual(t, got, `{"text":"hello"}`) {
			t.Errorf("result = %s, want the echoed payload", got)
		}
		if res.Task.ContextID != res.Task.ID {
			t.Errorf("contextId %q, want the task id %q", res.Task.ContextID, res.Task.ID)
		}
		// The task is one of ours.
		if got := ts.task(t, res.Task.ID)["status"]; got != "completed" {
			t.Errorf("native status = %v", got)
		}
	})
	t.Run("v0.3 blocking data and text", func(t *testing.T) {
		var tk a2aTask
		ts.ok(t, "message/send", map[string]any{"message": msg(true, "echo", data(map[string]any{"n": 7}), text("note"))}, &tk)
		if tk.Kind != "task" || tk.Status.State != "completed" {
			t.Fatalf("kind %q state %q, want task completed", tk.Kind, tk.Status.State)
		}
		if got := tk.resultData(t); !jsonEqual(t, got, `{"n":7,"text":"note"}`) {
			t.Errorf("result = %s", got)
		}
		if k := tk.Artifacts[0].Parts[0].Kind; k != "data" {
			t.Errorf("part kind = %q, want data", k)
		}
	})
	t.Run("v1.0 returnImmediately", func(t *testing.T) {
		var res struct{ Task a2aTask }
		ts.ok(t, "SendMessage", map[string]any{"message": msg(false, "sleep", data(map[string]any{"ms": 300})),
			"configuration": map[string]any{"returnImmediately": true}}, &res)
		if s := res.Task.Status.State; s != "TASK_STATE_SUBMITTED" && s != "TASK_STATE_WORKING" {
			t.Fatalf("state = %s, want submitted or working", s)
		}
		testutil.Eventually(t, pollTimeout, "the task completed", func() bool {
			var tk a2aTask
			ts.ok(t, "GetTask", map[string]any{"id": res.Task.ID}, &tk)
			return tk.Status.State == "TASK_STATE_COMPLETED"
		})
	})
	t.Run("v0.3 blocking false", func(t *testing.T) {
		var tk a2aTask
		ts.ok(t, "message/send", map[string]any{"message": msg(true, "sleep", data(map[string]any{"ms": 300})),
			"configuration": map[string]any{"blocking": false}}, &tk)
		if s := tk.Status.State; s != "submitted" && s != "working" {
			t.Fatalf("state = %s, want submitted or working", s)
		}
		var got a2aTask
		ts.ok(t, "tasks/get", map[string]any{"id": tk.ID}, &got)
		if got.ID != tk.ID || got.Kind != "task" {
			t.Errorf("tasks/get = %+v", got)
		}
	})
}

func TestA2AListAndCancel(t *testing.T) {
	ts := startServer(t)
	var done []string
	for i := range 3 {
		var res struct{ Task a2aTask }
		ts.ok(t, "SendMessage", map[string]any{"message": msg(false, "", text(fmt.Sprint(i)))}, &res)
		done = append(done, res.Task.ID)
	}
	var long struct{ Task a2aTask }
	ts.ok(t, "SendMessage", map[string]any{"message": msg(false, "sleep", data(map[string]any{"ms": 60000})),
		"configuration": map[string]any{"returnImmediately": true}}, &long)

	t.Run("status filter and pages", func(t *testing.T) {
		var got []string
		token := ""
		for range 10 {
			var page struct {
				Tasks         []a2aTask
				NextPageToken string
			}
			ts.ok(t, "ListTasks", map[string]any{"status": "TASK_STATE_COMPLETED", "pageSize": 2, "pageToken": token}, &page)
			for _, tk := range page.Tasks {
				got = append(got, tk.ID)
			}
			if token = page.NextPageToken; token == "" {
				break
			}
		}
		want := []string{done[2], done[1], done[0]} // newest first
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("completed tasks = %v, want %v", got, want)
		}
	})
	t.Run("working filter", func(t *testing.T) {
		testutil.Eventually(t, pollTimeout, "the sleep task working", func() bool {
			var page struct{ Tasks []a2aTask }
			ts.ok(t, "ListTasks", map[string]any{"status": "TASK_STATE_WORKING"}, &page)
			return len(page.Tasks) == 1 && page.Tasks[0].ID == long.Task.ID
		})
	})
	t.Run("cancel", func(t *testing.T) {
		var tk a2aTask
		ts.ok(t, "CancelTask", map[string]any{"id": long.Task.ID}, &tk)
		if tk.Status.State != "TASK_STATE_CANCELED" {
			t.Errorf("state after cancel = %s", tk.Status.State)
		}
		ts.wantRPCError(t, "tasks/cancel", map[string]any{"id": done[0]}, -32002)
		ts.wantRPCError(t, "CancelTask", map[string]any{"id": "no-such-task"}, -32001)
	})
}

func TestA2AErrors(t *testing.T) {
	ts := startServer(t)
	raw := func(t *testing.T, body string) *rpcReply {
		t.Helper()
		r := ts.do(t, "POST", "/a2a", []byte(body))
		r.wantStatus(t, http.StatusOK)
		var rep rpcReply
		if err := json.Unmarshal(r.body, &rep); err != nil || rep.Error == nil {
			t.Fatalf("answer %s is not a JSON-RPC error", r.body)
		}
		return &rep
	}
	for _, c := range []struct {
		name, body string
		code       int
	}{
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}]`, -32600},
		{"parse", `{"jsonrpc":`, -32700},
		{"no version", `{"id":1,"method":"GetTask"}`, -32600},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"tasks/explode"}`, -32601},
		{"bad params", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":5}}`, -32602},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := raw(t, c.body).Error.Code; got != c.code {
				t.Errorf("code = %d, want %d", got, c.code)
			}
		})
	}
	t.Run("id echoed", func(t *testing.T) {
		if got := string(raw(t, `{"jsonrpc":"2.0","id":"abc","method":"nope"}`).ID); got != `"abc"` {
			t.Errorf("id = %s", got)
		}
	})
	t.Run("task not found", func(t *testing.T) {
		ts.wantRPCError(t, "GetTask", map[string]any{"id": "nope"}, -32001)
		ts.wantRPCError(t, "tasks/get", map[string]any{"id": "nope"}, -32001)
	})
	t.Run("unknown task type", func(t *testing.T) {
		ts.wantRPCError(t, "SendMessage", map[string]any{"message": msg(false, "teleport", text("x"))}, -32004)
	})
	t.Run("file part", func(t *testing.T) {
		file := map[string]any{"kind": "file", "file": map[string]any{"uri": "http://127.0.0.1/x"}}
		ts.wantRPCError(t, "message/send", map[string]any{"message": msg(true, "", file)}, -32005)
	})
	t.Run("no message", func(t *testing.T) {
		ts.wantRPCError(t, "SendMessage", map[string]any{}, -32602)
	})
	t.Run("subscribe to a final task", func(t *testing.T) {
		var res struct{ Task a2aTask }
		ts.ok(t, "SendMessage", map[string]any{"message": msg(false, "", text("x"))}, &res)
		ts.wantRPCError(t, "SubscribeToTask", map[string]any{"id": res.Task.ID}, -32004)
	})
	t.Run("push config of a missing task", func(t *testing.T) {
		ts.wantRPCError(t, "CreateTaskPushNotificationConfig", map[string]any{"taskId": "nope", "url": "http://127.0.0.1:1/"}, -32001)
	})
	t.Run("read-only token cannot send", func(t *testing.T) {
		tok := createToken(t, ts, "a2a-reader", "tasks:read")
		r := ts.do(t, "POST", "/a2a", rpcBody(t, "SendMessage", map[string]any{"message": msg(false, "", text("x"))}), withToken(tok))
		r.wantStatus(t, http.StatusForbidden)
		var rep rpcReply
		if err := json.Unmarshal(r.body, &rep); err != nil || rep.Error == nil || rep.Error.Code != -31403 {
			t.Errorf("body %s, want a JSON-RPC error -31403", r.body)
		}
		r = ts.do(t, "POST", "/a2a", rpcBody(t, "GetTask", map[string]any{"id": "nope"}), withToken(tok))
		r.wantStatus(t, http.StatusOK)
	})
}

// a2aEvent is one event of an A2A stream.
type a2aEvent struct {
	id   string
	data string
}

// stream posts a streaming request and reads the whole stream (the server
// closes it after the final event).
func (ts *testServer) stream(t *testing.T, method string, params any, lastEventID string) []a2aEvent {
	t.Helper()
	req, err := http.NewRequest("POST", ts.base+"/a2a", bytes.NewReader(rpcBody(t, method, params)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("%s: Content-Type %q, want an SSE stream", method, ct)
	}
	var evs []a2aEvent
	var cur a2aEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != "" {
				evs = append(evs, cur)
			}
			cur = a2aEvent{}
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		case strings.HasPrefix(line, "data: "):
			cur.data += line[6:]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: read stream: %v", method, err)
	}
	return evs
}

// kinds names each v1.0 stream result by its field and state.
func kinds(t *testing.T, evs []a2aEvent) []string {
	t.Helper()
	var out []string
	for _, e := range evs {
		var rep struct {
			Result map[string]struct {
				Status struct{ State string }
			}
		}
		if err := json.Unmarshal([]byte(e.data), &rep); err != nil || len(rep.Result) != 1 {
			t.Fatalf("event %s is not a wrapped stream result: %s", e.id, e.data)
		}
		for k, v := range rep.Result {
			out = append(out, strings.TrimSpace(k+" "+strings.TrimPrefix(v.Status.State, "TASK_STATE_")))
		}
	}
	return out
}

// results renders each event as its id and its JSON-RPC result (the
// response id differs between requests).
func results(t *testing.T, evs []a2aEvent) []string {
	t.Helper()
	var out []string
	for _, e := range evs {
		var rep rpcReply
		if err := json.Unmarshal([]byte(e.data), &rep); err != nil {
			t.Fatalf("event %s: %v", e.id, err)
		}
		out = append(out, e.id+" "+string(rep.Result))
	}
	return out
}

func TestA2AStream(t *testing.T) {
	ts := startServer(t)
	params := map[string]any{"message": msg(false, "sleep", data(map[string]any{"ms": 200}))}
	evs := ts.stream(t, "SendStreamingMessage", params, "")
	t.Run("events", func(t *testing.T) {
		got := kinds(t, evs)
		if len(got) < 3 || !strings.HasPrefix(got[0], "task ") || got[len(got)-2] != "artifactUpdate" ||
			got[len(got)-1] != "statusUpdate COMPLETED" {
			t.Fatalf("events = %v, want the task, updates, the artifact and the final status", got)
		}
	})
	t.Run("ids increase", func(t *testing.T) {
		prev := -1
		for _, e := range evs {
			var n int
			if _, err := fmt.Sscan(e.id, &n); err != nil || n <= prev {
				t.Fatalf("ids %v do not increase", evs)
			}
			prev = n
		}
	})
	var first struct {
		Result struct{ Task a2aTask }
	}
	if err := json.Unmarshal([]byte(evs[0].data), &first); err != nil {
		t.Fatal(err)
	}
	id := first.Result.Task.ID
	t.Run("Last-Event-ID resumes", func(t *testing.T) {
		for i := range evs[:len(evs)-1] {
			got := ts.stream(t, "SubscribeToTask", map[string]any{"id": id}, evs[i].id)
			if fmt.Sprint(results(t, got)) != fmt.Sprint(results(t, evs[i+1:])) {
				t.Errorf("resumed after %s: %v, want %v", evs[i].id, got, evs[i+1:])
			}
		}
	})
	t.Run("subscribe to a running task", func(t *testing.T) {
		var res struct{ Task a2aTask }
		ts.ok(t, "SendMessage", map[string]any{"message": msg(false, "sleep", data(map[string]any{"ms": 200})),
			"configuration": map[string]any{"returnImmediately": true}}, &res)
		got := kinds(t, ts.stream(t, "SubscribeToTask", map[string]any{"id": res.Task.ID}, ""))
		if len(got) < 2 || !strings.HasPrefix(got[0], "task ") || got[len(got)-1] != "statusUpdate COMPLETED" {
			t.Errorf("events = %v", got)
		}
	})
	t.Run("v0.3 message/stream", func(t *testing.T) {
		evs := ts.stream(t, "message/stream", map[string]any{"message": msg(true, "sleep", data(map[string]any{"ms": 100}))}, "")
		var got []string
		for _, e := range evs {
			var rep struct {
				Result struct {
					Kind  string
					Final bool
				}
			}
			if err := json.Unmarshal([]byte(e.data), &rep); err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprint(rep.Result.Kind, rep.Result.Final))
		}
		if len(got) < 3 || got[0] != "taskfalse" || got[len(got)-2] != "artifact-updatefalse" || got[len(got)-1] != "status-updatetrue" {
			t.Errorf("kinds = %v", got)
		}
	})
}

// Past max_concurrent_tasks a send is refused with HTTP 429 and
// Retry-After, the JSON-RPC error (reason RATE_LIMITED) as the body; a
// streaming send too.
func TestA2ARateLimited(t *testing.T) {
	ts := startServer(t, func(c *agent.Config) { c.MaxConcurrentTasks = 1 })
	var res struct{ Task a2aTask }
	ts.ok(t, "SendMessage", map[string]any{"message": msg(false, "sleep", data(map[string]any{"ms": 60000})),
		"configuration": map[string]any{"returnImmediately": true}}, &res)
	for _, method := range []string{"SendMessage", "SendStreamingMessage", "message/send"} {
		t.Run(method, func(t *testing.T) {
			r := ts.do(t, "POST", "/a2a", rpcBody(t, method, map[string]any{"message": msg(strings.Contains(method, "/"), "", text("x"))}))
			r.wantStatus(t, http.StatusTooManyRequests)
			if r.header.Get("Retry-After") == "" {
				t.Error("no Retry-After")
			}
			var rep rpcReply
			if err := json.Unmarshal(r.body, &rep); err != nil || rep.Error == nil {
				t.Fatalf("body %s, want a JSON-RPC error", r.body)
			}
			checkErrorData(t, method, rep.Error.Data)
			if !strings.Contains(string(rep.Error.Data), `"reason":"RATE_LIMITED"`) {
				t.Errorf("error data %s, want reason RATE_LIMITED", rep.Error.Data)
			}
		})
	}
	ts.ok(t, "CancelTask", map[string]any{"id": res.Task.ID}, nil)
}

// TestA2AIdempotent: SendMessage with an Idempotency-Key creates one task;
// the same params again (another JSON-RPC id) answer the stored result,
// other params with the key are refused as invalid params.
func TestA2AIdempotent(t *testing.T) {
	ts := startServer(t)
	params := map[string]any{"message": msg(false, "sleep", data(map[string]any{"ms": 50})),
		"configuration": map[string]any{"returnImmediately": true}}
	send := func(t *testing.T, p any) (*reply, *rpcReply) {
		t.Helper()
		r := ts.do(t, "POST", "/a2a", rpcBody(t, "SendMessage", p), withHeader("Idempotency-Key", "k-1"))
		var rep rpcReply
		if r.status != http.StatusOK || json.Unmarshal(r.body, &rep) != nil {
			t.Fatalf("HTTP %d %s", r.status, r.body)
		}
		return r, &rep
	}
	taskID := func(t *testing.T, rep *rpcReply) string {
		t.Helper()
		var res struct{ Task a2aTask }
		if rep.Error != nil || json.Unmarshal(rep.Result, &res) != nil || res.Task.ID == "" {
			t.Fatalf("answer %s %+v, want a task", rep.Result, rep.Error)
		}
		return res.Task.ID
	}
	r1, rep1 := send(t, params)
	first := taskID(t, rep1)
	if r1.header.Get("Idempotent-Replayed") != "" {
		t.Error("the first answer says it is replayed")
	}
	r2, rep2 := send(t, params)
	if got := taskID(t, rep2); got != first {
		t.Errorf("the same request again made task %s, want %s", got, first)
	}
	if r2.header.Get("Idempotent-Replayed") != "true" {
		t.Error("the second answer does not say it is replayed")
	}
	if !bytes.Equal(rep1.Result, rep2.Result) {
		t.Errorf("replayed result %s, want the stored %s", rep2.Result, rep1.Result)
	}
	var list struct{ Tasks []a2aTask }
	ts.ok(t, "ListTasks", map[string]any{}, &list)
	if len(list.Tasks) != 1 {
		t.Errorf("%d tasks, want 1", len(list.Tasks))
	}
	other := map[string]any{"message": msg(false, "echo", text("else"))}
	if _, rep := send(t, other); rep.Error == nil || rep.Error.Code != -32602 {
		t.Errorf("the key with other params: %s %+v, want -32602", rep.Result, rep.Error)
	}
}
