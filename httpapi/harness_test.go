package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/handlers"
	"github.com/synapse-edge/synapse/httpapi"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/internal/testutil/peernode"
	"github.com/synapse-edge/synapse/internal/testutil/tier1test"
	"github.com/synapse-edge/synapse/internal/testutil/wiretest"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

// The harness runs a real agent and a real server on a loopback port and
// talks to it with net/http, as any client would.

const adminToken = "admin-token"

// pollTimeout bounds every wait for a state; generous for -race on 2 cores.
const pollTimeout = 15 * time.Second

// testServer is one agent and its HTTP server.
type testServer struct {
	t    *testing.T
	cfg  agent.Config
	opts agent.Options
	// tier1 tweaks the tier1 section of the agent's tier 1 (t1, new at
	// each open).
	tier1  []func(*tier1.Config)
	t1     *tier1.Service
	limits httpapi.Limits // zero: httpapi.DefaultLimits
	a      *agent.Agent
	net    *peer.Network
	srv    *httpapi.Server
	base   string
	client *http.Client
	// served is closed when Serve returns, with its error in serveErr.
	served   chan struct{}
	serveErr error
	up       bool
	// node runs the agent and server of a peer server (startPeerServer).
	node *peernode.Node
}

// allowLoopback lets the agent call webhooks on this host: the outbound
// policy refuses loopback targets unless the config allows them.
func allowLoopback(c *agent.Config) { c.Outbound.Allow = []string{"127.0.0.0/8", "::1"} }

// startServer opens an agent on a fresh data directory with the admin token
// "admin-token" and serves it on 127.0.0.1:0; mutate tweaks the config.
func startServer(t *testing.T, mutate ...func(*agent.Config)) *testServer {
	t.Helper()
	return startServerLimits(t, nil, mutate...)
}

// startTier1Server is startServer with the tier1 section changed by
// tier1.
func startTier1Server(t *testing.T, tier1 func(*tier1.Config), mutate ...func(*agent.Config)) *testServer {
	t.Helper()
	return startServerWith(t, nil, tier1, mutate...)
}

// startServerLimits is startServer with the server's limits changed by
// limits (nil: the defaults).
func startServerLimits(t *testing.T, limits func(*httpapi.Limits), mutate ...func(*agent.Config)) *testServer {
	t.Helper()
	return startServerWith(t, limits, nil, mutate...)
}

// startServerWith is startServer with the server's limits changed by
// limits and the tier1 section by t1 (nil: the defaults).
func startServerWith(t *testing.T, limits func(*httpapi.Limits), t1 func(*tier1.Config), mutate ...func(*agent.Config)) *testServer {
	t.Helper()
	cfg := agent.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.AdminToken = adminToken
	for _, m := range mutate {
		m(&cfg)
	}
	ts := &testServer{t: t, cfg: cfg, limits: httpapi.DefaultLimits()}
	if limits != nil {
		limits(&ts.limits)
	}
	if t1 != nil {
		ts.tier1 = append(ts.tier1, t1)
	}
	ts.open()
	t.Cleanup(ts.stop)
	return ts
}

func (ts *testServer) open() {
	t := ts.t
	t.Helper()
	opts, t1 := tier1test.Options(t, wiretest.Options(t, ts.cfg, ts.opts), ts.tier1...)
	a, err := agent.New(ts.cfg, opts)
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = a.Close(ctx)
		t.Fatalf("listen: %v", err)
	}
	ts.a, ts.net, ts.t1 = a, nw, t1
	ts.srv = httpapi.New(a, httpapi.Options{Version: "test", Network: nw, Limits: ts.limits, Tier1: t1})
	ts.base = "http://" + ln.Addr().String()
	ts.client = &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: 32, DisableCompression: true},
		Timeout:   30 * time.Second,
	}
	served := make(chan struct{})
	ts.served = served
	go func(srv *httpapi.Server) {
		defer close(served)
		ts.serveErr = srv.Serve(ln)
	}(ts.srv)
	ts.up = true
}

// shutdown stops the server (checking that Shutdown and Serve end cleanly)
// but leaves the agent open.
func (ts *testServer) shutdown(ctx context.Context) {
	t := ts.t
	t.Helper()
	ts.client.CloseIdleConnections()
	if err := ts.srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	select {
	case <-ts.served:
		if ts.serveErr != nil {
			t.Errorf("Serve: %v", ts.serveErr)
		}
	case <-ctx.Done():
		t.Errorf("Serve did not return after Shutdown")
	}
}

// stop shuts the server down and closes the agent; safe to call twice.
func (ts *testServer) stop() {
	if !ts.up {
		return
	}
	ts.up = false
	if ts.node != nil {
		ts.client.CloseIdleConnections()
		ts.node.Stop()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts.shutdown(ctx)
	_ = ts.srv.Shutdown(ctx) // a second call is a no-op
	if err := ts.a.Close(ctx); err != nil {
		ts.t.Errorf("agent.Close: %v", err)
	}
}

// restart closes agent and server and opens new ones on the same data
// directory (on a new port; a peer server on its own address).
func (ts *testServer) restart() {
	ts.t.Helper()
	ts.stop()
	if ts.node != nil { // a peer server keeps its address
		ts.node.Open()
		ts.cfg, ts.a, ts.srv, ts.up = ts.node.Config, ts.node.Agent, ts.node.Server, true
		return
	}
	ts.open()
}

// reply is a whole HTTP answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

type reqOpt func(*http.Request)

// withToken sets the bearer token; "" sends no Authorization header.
func withToken(tok string) reqOpt {
	return func(r *http.Request) {
		if tok == "" {
			r.Header.Del("Authorization")
			return
		}
		r.Header.Set("Authorization", "Bearer "+tok)
	}
}

func withHeader(k, v string) reqOpt { return func(r *http.Request) { r.Header.Set(k, v) } }

// try sends a request with the admin token (and Content-Type JSON when there
// is a body) unless opts say otherwise. It is safe in any goroutine.
func (ts *testServer) try(method, path string, body []byte, opts ...reqOpt) (*reply, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, o := range opts {
		o(req)
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	return &reply{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// do is try that fails the test on a transport error.
func (ts *testServer) do(t *testing.T, method, path string, body []byte, opts ...reqOpt) *reply {
	t.Helper()
	r, err := ts.try(method, path, body, opts...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

func api(path string) string { return wire.APIPrefix + path }

// object decodes a JSON object answer.
func (r *reply) object(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("answer (%d) is not a JSON object: %v\n%s", r.status, err, r.body)
	}
	return m
}

// wantStatus fails the test unless the answer has status want.
func (r *reply) wantStatus(t *testing.T, want int) {
	t.Helper()
	if r.status != want {
		t.Fatalf("status = %d, want %d; body: %s", r.status, want, r.body)
	}
}

// wantError checks the TPError shape {"error":{"code","message","details"?,
// "retriable"}} with the given status and code, and returns the inner object.
func (r *reply) wantError(t *testing.T, status int, code wire.ErrorCode) map[string]any {
	t.Helper()
	r.wantStatus(t, status)
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
	m := r.object(t)
	if len(m) != 1 {
		t.Errorf("error body has keys %v, want only \"error\"", keys(m))
	}
	e, ok := m["error"].(map[string]any)
	if !ok {
		t.Fatalf("body has no error object: %s", r.body)
	}
	if got := e["code"]; got != string(code) {
		t.Errorf("error.code = %v, want %q (message %v)", got, code, e["message"])
	}
	if msg, ok := e["message"].(string); !ok || msg == "" {
		t.Errorf("error.message = %#v, want a non-empty string", e["message"])
	}
	if _, ok := e["retriable"].(bool); !ok {
		t.Errorf("error.retriable = %#v, want a bool", e["retriable"])
	}
	if d, present := e["details"]; present {
		if _, ok := d.(map[string]any); !ok {
			t.Errorf("error.details = %#v, want an object", d)
		}
	}
	return e
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// submit posts a task body and returns the task id of the 201 answer.
func (ts *testServer) submit(t *testing.T, body string, opts ...reqOpt) string {
	t.Helper()
	r := ts.do(t, "POST", api("/task"), []byte(body), opts...)
	r.wantStatus(t, http.StatusCreated)
	id, _ := r.object(t)["task_id"].(string)
	if id == "" {
		t.Fatalf("201 answer has no task_id: %s", r.body)
	}
	return id
}

// task reads GET /task/{id}.
func (ts *testServer) task(t *testing.T, id string) map[string]any {
	t.Helper()
	r := ts.do(t, "GET", api("/task/"+id), nil)
	r.wantStatus(t, http.StatusOK)
	return r.object(t)
}

// waitStatus polls GET /task/{id} until the task is in state want; reaching
// another final state first fails the test.
func (ts *testServer) waitStatus(t *testing.T, id string, want wire.Status) map[string]any {
	t.Helper()
	var last map[string]any
	testutil.Eventually(t, pollTimeout, fmt.Sprintf("task %s to be %s", id, want), func() bool {
		last = ts.task(t, id)
		st := wire.Status(fmt.Sprint(last["status"]))
		if st != want && st.Terminal() {
			t.Fatalf("task %s reached %s, want %s: %v", id, st, want, last)
		}
		return st == want
	})
	return last
}

// listIDs pages through GET /tasks (query q, without page_token) and returns
// every task id in order.
func (ts *testServer) listIDs(t *testing.T, q string) []string {
	t.Helper()
	var ids []string
	token := ""
	for page := 0; page < 1000; page++ {
		path := api("/tasks?" + q)
		if token != "" {
			path += "&page_token=" + token
		}
		r := ts.do(t, "GET", path, nil)
		r.wantStatus(t, http.StatusOK)
		var list struct {
			Tasks []struct {
				TaskID string `json:"task_id"`
			} `json:"tasks"`
			NextPageToken *string `json:"next_page_token"`
		}
		if err := json.Unmarshal(r.body, &list); err != nil {
			t.Fatalf("GET /tasks: %v\n%s", err, r.body)
		}
		if list.NextPageToken == nil {
			t.Fatalf("GET /tasks answer has no next_page_token field: %s", r.body)
		}
		for _, x := range list.Tasks {
			ids = append(ids, x.TaskID)
		}
		token = *list.NextPageToken
		if token == "" {
			return ids
		}
	}
	t.Fatalf("GET /tasks did not end after 1000 pages")
	return nil
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("not JSON: %v: %q", err, a)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("not JSON: %v: %q", err, b)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// cancelTask cancels a task and checks the 200 answer.
func (ts *testServer) cancelTask(t *testing.T, id string) {
	t.Helper()
	r := ts.do(t, "POST", api("/task/"+id+"/cancel"), nil)
	r.wantStatus(t, http.StatusOK)
	if got := r.object(t)["status"]; got != string(wire.StatusCancelled) {
		t.Errorf("cancel answer status = %v, want cancelled", got)
	}
}
