package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/handlers"
	"github.com/synapse-edge/synapse/hil"
	"github.com/synapse-edge/synapse/httpapi"
	"github.com/synapse-edge/synapse/internal/testutil/tier1test"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

// startHILServer is startServer with a human-in-the-loop manager (polling
// every 20 ms) wired into the server.
func startHILServer(t *testing.T, mutate ...func(*agent.Config)) (*testServer, *hil.Manager) {
	t.Helper()
	cfg := agent.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.AdminToken = adminToken
	for _, m := range mutate {
		m(&cfg)
	}
	t1 := tier1test.Service(t, agent.Options{})
	a, err := agent.New(cfg, agent.Options{Tier1: t1})
	if err != nil {
		t.Fatalf("agent.New: %v", err)
	}
	if err := handlers.Register(a, handlers.Options{}); err != nil {
		t.Fatalf("handlers.Register: %v", err)
	}
	nw, err := peer.New(a, peer.Options{})
	if err != nil {
		t.Fatalf("peer.New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Open(ctx); err != nil {
		t.Fatalf("agent.Open: %v", err)
	}
	m := hil.New(a, hil.Options{})
	if err := m.Start(ctx); err != nil {
		_ = a.Close(ctx)
		t.Fatalf("hil Start: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = a.Close(ctx)
		t.Fatalf("listen: %v", err)
	}
	ts := &testServer{t: t, cfg: cfg, a: a, net: nw, t1: t1, base: "http://" + ln.Addr().String(), served: make(chan struct{})}
	ts.srv = httpapi.New(a, httpapi.Options{Version: "test", HIL: m, Network: nw, Tier1: t1})
	ts.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}, Timeout: 30 * time.Second}
	go func(srv *httpapi.Server, served chan struct{}) {
		defer close(served)
		ts.serveErr = srv.Serve(ln)
	}(ts.srv, ts.served)
	ts.up = true
	t.Cleanup(ts.stop)
	t.Cleanup(func() { // runs before ts.stop: the manager closes before the agent
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("hil Close: %v", err)
		}
	})
	return ts, m
}

// token creates a token with scopes and returns its secret.
func (ts *testServer) token(t *testing.T, scopes ...auth.Scope) string {
	t.Helper()
	names := make([]string, len(scopes))
	for i, s := range scopes {
		names[i] = string(s)
	}
	tc, err := ts.a.Tokens().Create(context.Background(), strings.Join(names, "+"), scopes)
	if err != nil {
		t.Fatalf("CreateToken(%v): %v", scopes, err)
	}
	return tc.Token
}

// confirmTask submits a confirm task and waits until it is need_human.
func (ts *testServer) confirmTask(t *testing.T, question string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"task_type": "confirm", "payload": map[string]any{
		"question": question,
		"options":  []map[string]any{{"field": "window", "value": "tonight", "pros_cons": "low traffic", "confidence": 80}},
	}})
	id := ts.submit(t, string(body))
	ts.waitStatus(t, id, wire.StatusNeedHuman)
	return id
}

// hilRequests reads GET /hil (with query q) with the admin token.
func (ts *testServer) hilRequests(t *testing.T, q string) []map[string]any {
	t.Helper()
	r := ts.do(t, "GET", api("/hil"+q), nil)
	r.wantStatus(t, http.StatusOK)
	var list struct {
		Requests   []map[string]any `json:"requests"`
		ServerTime string           `json:"server_time"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil {
		t.Fatalf("GET /hil: %v\n%s", err, r.body)
	}
	if list.Requests == nil {
		t.Fatalf("GET /hil has no requests array: %s", r.body)
	}
	if _, err := time.Parse(time.RFC3339, list.ServerTime); err != nil {
		t.Errorf("server_time %q: %v", list.ServerTime, err)
	}
	return list.Requests
}

func findRequest(reqs []map[string]any, id string) map[string]any {
	for _, r := range reqs {
		if r["task_id"] == id {
			return r
		}
	}
	return nil
}

func TestHILRoutes(t *testing.T) {
	ts, _ := startHILServer(t)
	l1 := ts.token(t, auth.ScopeHILL1)
	l2 := ts.token(t, auth.ScopeHILL2)
	tier1 := ts.token(t, auth.ScopeTier1Write)
	id := ts.confirmTask(t, "Deploy build 42?")

	t.Run("list", func(t *testing.T) {
		r := findRequest(ts.hilRequests(t, ""), id)
		if r == nil {
			t.Fatalf("GET /hil does not list task %s", id)
		}
		reason, _ := r["reason"].(map[string]any)
		ctx, _ := r["context"].(map[string]any)
		opts, _ := r["options"].([]any)
		if r["task_type"] != "confirm" || r["state"] != "pending" || reason["message"] != "Deploy build 42?" ||
			ctx["task_summary"] != "Deploy build 42?" || len(opts) != 1 ||
			r["escalation_level"] != 1.0 || r["levels"] != 3.0 || r["reviewers_scope"] != string(auth.ScopeHILL1) {
			t.Errorf("request = %v", r)
		}
		for _, f := range []string{"deadline", "created_at"} {
			if _, err := time.Parse(time.RFC3339, fmt.Sprint(r[f])); err != nil {
				t.Errorf("%s = %v: %v", f, r[f], err)
			}
		}
	})
	t.Run("get", func(t *testing.T) {
		r := ts.do(t, "GET", api("/hil/"+id), nil, withToken(l1))
		r.wantStatus(t, http.StatusOK)
		m := r.object(t)
		steps, _ := m["steps"].([]any)
		if m["task_id"] != id || len(steps) != 1 || steps[0].(map[string]any)["step"] != "created" {
			t.Errorf("GET /hil/%s = %s", id, r.body)
		}
	})
	t.Run("auth", func(t *testing.T) {
		ts.do(t, "GET", api("/hil"), nil, withToken("")).wantError(t, http.StatusUnauthorized, wire.CodeUnauthorized)
		ts.do(t, "GET", api("/hil"), nil, withToken(tier1)).wantError(t, http.StatusForbidden, wire.CodePermissionDenied)
		ts.do(t, "GET", api("/hil/stream"), nil, withToken(tier1)).wantError(t, http.StatusForbidden, wire.CodePermissionDenied)
		ts.do(t, "GET", api("/hil"), nil, withToken(l2)).wantStatus(t, http.StatusOK)
		e := ts.do(t, "POST", api("/hil/"+id+"/decision"), []byte(`{"action":"approve"}`), withToken(l2)).
			wantError(t, http.StatusForbidden, wire.CodePermissionDenied)
		if d, _ := e["details"].(map[string]any); d["scope"] != string(auth.ScopeHILL1) || d["escalation_level"] != 1.0 {
			t.Errorf("details = %v, want the level's scope and level", e["details"])
		}
		ts.do(t, "POST", api("/hil/"+id+"/decision"), []byte(`{"action":"approve"}`), withToken(tier1)).
			wantError(t, http.StatusForbidden, wire.CodePermissionDenied)
	})
	t.Run("bad decisions", func(t *testing.T) {
		ts.do(t, "POST", api("/hil/"+id+"/decision"), []byte(`{"action":"maybe"}`), withToken(l1)).
			wantError(t, http.StatusBadRequest, wire.CodeInvalidParams)
		ts.do(t, "POST", api("/hil/"+id+"/decision"), []byte(`{"action":"modify"}`), withToken(l1)).
			wantError(t, http.StatusBadRequest, wire.CodeInvalidParams)
		ts.do(t, "POST", api("/hil/"+id+"/decision"), []byte(`{"action":`), withToken(l1)).
			wantError(t, http.StatusBadRequest, wire.CodeMessageFormatInvalid)
	})
	t.Run("approve", func(t *testing.T) {
		r := ts.do(t, "POST", api("/hil/"+id+"/decision"), []byte(`{"action":"approve","approved_fields":{"window":"now"},"notes":"go"}`), withToken(l1))
		r.wantStatus(t, http.StatusOK)
		m := r.object(t)
		d, _ := m["decision"].(map[string]any)
		if m["state"] != "decided" || d["action"] != "approve" || d["notes"] != "go" || d["level"] != 1.0 {
			t.Errorf("answer = %s", r.body)
		}
		task := ts.waitStatus(t, id, wire.StatusCompleted)
		var res map[string]any
		if err := json.Unmarshal([]byte(fmt.Sprint(task["result_json"])), &res); err != nil {
			t.Fatalf("result_json: %v", err)
		}
		if f, _ := res["approved_fields"].(map[string]any); f["window"] != "now" {
			t.Errorf("result = %v, want the approved fields", res)
		}
	})
	t.Run("decided twice", func(t *testing.T) {
		ts.do(t, "POST", api("/hil/"+id+"/decision"), []byte(`{"action":"reject"}`)).
			wantError(t, http.StatusConflict, wire.CodeInvalidStateChange)
	})
	t.Run("all", func(t *testing.T) {
		if r := findRequest(ts.hilRequests(t, ""), id); r != nil {
			t.Errorf("decided request still listed as pending: %v", r)
		}
		r := findRequest(ts.hilRequests(t, "?all=true&page_size=10"), id)
		if r == nil || r["state"] != "decided" {
			t.Fatalf("?all=true lists %v for the decided request", r)
		}
		ts.do(t, "GET", api("/hil?all=maybe"), nil).wantError(t, http.StatusBadRequest, wire.CodeInvalidParams)
	})
	t.Run("not found", func(t *testing.T) {
		ts.do(t, "GET", api("/hil/no-such-task"), nil).wantError(t, http.StatusNotFound, wire.CodeTaskNotFound)
		ts.do(t, "POST", api("/hil/no-such-task/decision"), []byte(`{"action":"approve"}`)).
			wantError(t, http.StatusNotFound, wire.CodeTaskNotFound)
	})
}

func TestHILNotRunning(t *testing.T) {
	ts := startServer(t)
	ts.do(t, "GET", api("/hil"), nil).wantError(t, http.StatusServiceUnavailable, wire.CodeAgentNotReady)
}

// openHILStream opens GET /hil/stream with the admin token.
func (ts *testServer) openHILStream(t *testing.T, lastEventID string) *sseReader {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pollTimeout)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", ts.base+api("/hil/stream"), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatalf("open stream: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream status = %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("Content-Type = %q, want text/event-stream", ct)
	}
	return &sseReader{br: bufio.NewReader(resp.Body)}
}

// nextHIL reads the next event, failing the test on an error.
func nextHIL(t *testing.T, r *sseReader) sseEvent {
	t.Helper()
	ev, err := r.next()
	if err != nil {
		t.Fatalf("read event: %v", err)
	}
	return ev
}

func TestHILStream(t *testing.T) {
	ts, _ := startHILServer(t)
	s := ts.openHILStream(t, "")
	id := ts.confirmTask(t, "Reboot the gateway?")
	created := nextHIL(t, s)
	if created.event != "hil" || created.data["change"] != "created" || created.data["task_id"] != id || created.id == 0 {
		t.Fatalf("first event = %+v", created)
	}
	ts.do(t, "POST", api("/hil/"+id+"/decision"), []byte(`{"action":"reject","rejection_reason":"not now"}`)).wantStatus(t, http.StatusOK)
	decided := nextHIL(t, s)
	if decided.data["change"] != "decided" || decided.data["state"] != "decided" || decided.id != created.id+1 {
		t.Fatalf("second event = %+v (id %d after %d)", decided, decided.id, created.id)
	}
	ts.waitStatus(t, id, wire.StatusRejected)

	t.Run("resume", func(t *testing.T) {
		r := ts.openHILStream(t, fmt.Sprint(created.id))
		ev := nextHIL(t, r)
		if ev.id != decided.id || ev.data["change"] != "decided" {
			t.Errorf("resumed with %+v, want the decided event %d", ev, decided.id)
		}
	})
	t.Run("reset", func(t *testing.T) {
		r := ts.openHILStream(t, "1")
		if ev := nextHIL(t, r); ev.event != "reset" {
			t.Errorf("stale Last-Event-ID: first event %+v, want reset", ev)
		}
	})
	t.Run("bad id", func(t *testing.T) {
		ts.do(t, "GET", api("/hil/stream"), nil, withHeader("Last-Event-ID", "x")).
			wantError(t, http.StatusBadRequest, wire.CodeInvalidParams)
	})
	t.Run("ids keep increasing", func(t *testing.T) {
		id2 := ts.confirmTask(t, "Again?")
		var got []string
		for len(got) < 1 {
			ev := nextHIL(t, s)
			if ev.data["task_id"] == id2 {
				got = append(got, fmt.Sprint(ev.data["change"]))
				if ev.id <= decided.id {
					t.Errorf("id %d after %d", ev.id, decided.id)
				}
			}
		}
		if !slices.Equal(got, []string{"created"}) {
			t.Errorf("events = %v", got)
		}
		// Cancelling closes the request (and lets the agent close at once:
		// a handler waiting for a person holds up shutdown).
		ts.cancelTask(t, id2)
		ev := nextHIL(t, s)
		if ev.data["task_id"] != id2 || ev.data["change"] != "closed" {
			t.Errorf("after cancel: %+v, want closed", ev)
		}
	})
}
