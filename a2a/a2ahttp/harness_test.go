package a2ahttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/internal/testutil/peernode"
	"github.com/synapse-edge/synapse/internal/testutil/tasktest"
	"github.com/synapse-edge/synapse/wire"
)

// The binding is tested as clients meet it: a real agent served by the
// real HTTP server (package httpapi mounts the binding) on a loopback
// port (a peernode.Node), driven with net/http.

const adminToken = "admin-token"

// pollTimeout bounds every wait for a state; generous for -race on 2 cores.
const pollTimeout = 15 * time.Second

// testServer is one served agent and a client of it.
type testServer struct {
	node   *peernode.Node
	a      *agent.Agent // the open agent, new after restart
	base   string       // http://127.0.0.1:PORT, kept across restarts
	client *http.Client
}

// allowLoopback lets the agent call webhooks on this host: the outbound
// policy refuses loopback targets unless the config allows them.
func allowLoopback(c *agent.Config) { c.Outbound.Allow = []string{"127.0.0.0/8", "::1"} }

// startServer serves an agent with the admin token adminToken on a fresh
// data directory; mutate tweaks its config. It stops when the test ends.
func startServer(t *testing.T, mutate ...func(*agent.Config)) *testServer {
	t.Helper()
	return startServerNode(t, peernode.Options{Config: mutate})
}

// startServerNode is startServer with the node's options (the network's
// p2p section, ...); the admin token is adminToken.
func startServerNode(t *testing.T, opts peernode.Options) *testServer {
	t.Helper()
	opts.AdminToken = adminToken
	n := peernode.Start(t, opts)
	ts := &testServer{node: n, a: n.Agent, base: n.URL(), client: &http.Client{Timeout: 30 * time.Second}}
	t.Cleanup(ts.client.CloseIdleConnections) // before the node stops
	return ts
}

// restart closes server and agent and opens them again on the same data
// directory and address.
func (ts *testServer) restart() {
	ts.client.CloseIdleConnections()
	ts.node.Restart()
	ts.a = ts.node.Agent
}

// reply is a whole HTTP answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// wantStatus fails the test unless the answer has status want.
func (r *reply) wantStatus(t *testing.T, want int) {
	t.Helper()
	if r.status != want {
		t.Fatalf("status = %d, want %d; body: %s", r.status, want, r.body)
	}
}

type reqOpt func(*http.Request)

// withToken sets the bearer token; "" sends no Authorization header.
func withToken(tok string) reqOpt {
	return func(r *http.Request) {
		r.Header.Del("Authorization")
		if tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
	}
}

func withHeader(k, v string) reqOpt { return func(r *http.Request) { r.Header.Set(k, v) } }

// do sends a request with the admin token (and Content-Type JSON with a
// body) unless opts say otherwise, and reads the whole answer.
func (ts *testServer) do(t *testing.T, method, path string, body []byte, opts ...reqOpt) *reply {
	t.Helper()
	req, err := http.NewRequest(method, ts.base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if body != nil {
		req.Header.Set("Content-Type", wire.ContentJSON)
	}
	for _, o := range opts {
		o(req)
	}
	resp, err := ts.client.Do(req)
	if err == nil {
		defer resp.Body.Close()
		body, err = io.ReadAll(resp.Body)
	}
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return &reply{status: resp.StatusCode, header: resp.Header, body: body}
}

func api(path string) string { return wire.APIPrefix + path }

// task reads the task with the native GET /task/{id}.
func (ts *testServer) task(t *testing.T, id string) map[string]any {
	t.Helper()
	r := ts.do(t, "GET", api("/task/"+id), nil)
	r.wantStatus(t, http.StatusOK)
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("GET /task/%s: %v\n%s", id, err, r.body)
	}
	return m
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(t *testing.T, got, want string) bool {
	t.Helper()
	return tasktest.JSONEqual(t, []byte(got), []byte(want))
}

// createToken creates a token with scopes and returns its secret.
func createToken(t *testing.T, ts *testServer, name string, scopes ...auth.Scope) string {
	t.Helper()
	ti, err := ts.a.Tokens().Create(context.Background(), name, scopes)
	if err != nil {
		t.Fatalf("create token %s: %v", name, err)
	}
	return ti.Token
}
