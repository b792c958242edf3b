package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// createToken makes a token through POST /tokens and returns its secret.
func createToken(t *testing.T, ts *testServer, name string, scopes ...auth.Scope) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"name": name, "scopes": scopes})
	r := ts.do(t, "POST", api("/tokens"), body)
	r.wantStatus(t, http.StatusCreated)
	tok, _ := r.object(t)["token"].(string)
	if tok == "" {
		t.Fatalf("POST /tokens answer has no token: %s", r.body)
	}
	return tok
}

func TestAuth(t *testing.T) {
	ts := startServer(t)
	task := []byte(`{"task_type":"echo","payload":{}}`)

	t.Run("no token", func(t *testing.T) {
		for _, c := range []struct{ method, path string }{
			{"POST", api("/task")}, {"GET", api("/tasks")}, {"GET", api("/task/x")},
			{"GET", api("/tokens")}, {"GET", "/metrics"},
		} {
			r := ts.do(t, c.method, c.path, task, withToken(""))
			r.wantError(t, http.StatusUnauthorized, wire.CodeUnauthorized)
			if h := r.header.Get("WWW-Authenticate"); !strings.HasPrefix(h, "Bearer") {
				t.Errorf("%s %s: WWW-Authenticate = %q, want a Bearer challenge", c.method, c.path, h)
			}
		}
	})

	t.Run("bad token", func(t *testing.T) {
		r := ts.do(t, "GET", api("/tasks"), nil, withToken("not-a-token"))
		r.wantError(t, http.StatusUnauthorized, wire.CodeUnauthorized)
		if h := r.header.Get("WWW-Authenticate"); !strings.Contains(h, "invalid_token") {
			t.Errorf("WWW-Authenticate = %q, want error=\"invalid_token\"", h)
		}
		ts.do(t, "GET", api("/tasks"), nil, withHeader("Authorization", "Basic YWRtaW4=")).
			wantError(t, http.StatusUnauthorized, wire.CodeUnauthorized)
	})

	t.Run("read-only token", func(t *testing.T) {
		ro := createToken(t, ts, "reader", "tasks:read")
		ts.do(t, "GET", api("/tasks"), nil, withToken(ro)).wantStatus(t, http.StatusOK)
		e := ts.do(t, "POST", api("/task"), task, withToken(ro)).wantError(t, http.StatusForbidden, wire.CodePermissionDenied)
		if d, _ := e["details"].(map[string]any); d["scope"] != "tasks:write" {
			t.Errorf("details = %v, want scope tasks:write", e["details"])
		}
		ts.do(t, "GET", api("/tokens"), nil, withToken(ro)).wantError(t, http.StatusForbidden, wire.CodePermissionDenied)
		if got := ts.listIDs(t, ""); len(got) != 0 {
			t.Errorf("tasks = %v, want none", got)
		}
	})

	t.Run("public routes", func(t *testing.T) {
		r := ts.do(t, "GET", api("/health"), nil, withToken(""))
		r.wantStatus(t, http.StatusOK)
		h := r.object(t)
		if h["status"] != "SERVING" || h["version"] != "test" {
			t.Errorf("health = %v, want SERVING, version test", h)
		}
		if _, ok := h["uptime_seconds"].(float64); !ok {
			t.Errorf("health uptime_seconds = %#v, want a number", h["uptime_seconds"])
		}
		r = ts.do(t, "GET", api("/identity"), nil, withToken(""))
		r.wantStatus(t, http.StatusOK)
		if id, _ := r.object(t)["agent_id"].(string); id != ts.a.Identity().AgentID || id == "" {
			t.Errorf("identity agent_id = %q, want %q", id, ts.a.Identity().AgentID)
		}
		r = ts.do(t, "GET", api("/capabilities"), nil, withToken(""))
		r.wantStatus(t, http.StatusOK)
		var caps struct {
			Types []struct {
				Type string `json:"type"`
			} `json:"supported_task_types"`
		}
		if err := json.Unmarshal(r.body, &caps); err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, x := range caps.Types {
			types = append(types, x.Type)
		}
		if !strings.Contains(strings.Join(types, ","), "echo") || !strings.Contains(strings.Join(types, ","), "sleep") {
			t.Errorf("supported task types = %v, want echo and sleep", types)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		ts.do(t, "POST", api("/task?wait=5"), task).wantStatus(t, http.StatusOK)
		ts.do(t, "GET", "/metrics", nil, withToken("")).wantError(t, http.StatusUnauthorized, wire.CodeUnauthorized)
		r := ts.do(t, "GET", "/metrics", nil)
		r.wantStatus(t, http.StatusOK)
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
			t.Errorf("Content-Type = %q, want text/plain", ct)
		}
		var submitted string
		for _, line := range strings.Split(string(r.body), "\n") {
			if v, ok := strings.CutPrefix(line, "synapse_tasks_submitted_total "); ok {
				submitted = v
			}
		}
		if n, err := strconv.ParseFloat(submitted, 64); err != nil || n < 1 {
			t.Errorf("synapse_tasks_submitted_total = %q, want at least 1\n%s", submitted, r.body)
		}
		if !bytes.Contains(r.body, []byte("# TYPE synapse_tasks_submitted_total counter")) {
			t.Errorf("metrics lack the TYPE line of synapse_tasks_submitted_total")
		}
	})
}

func TestAdmin(t *testing.T) {
	ts := startServer(t)

	t.Run("tokens", func(t *testing.T) {
		r := ts.do(t, "POST", api("/tokens"), []byte(`{"name":"ci","scopes":["tasks:write"]}`))
		r.wantStatus(t, http.StatusCreated)
		created := r.object(t)
		secret, _ := created["token"].(string)
		id, _ := created["token_id"].(string)
		if secret == "" || id == "" {
			t.Fatalf("created token = %s, want token and token_id", r.body)
		}
		ts.do(t, "GET", api("/tasks"), nil, withToken(secret)).wantStatus(t, http.StatusOK)

		r = ts.do(t, "GET", api("/tokens"), nil)
		r.wantStatus(t, http.StatusOK)
		if bytes.Contains(r.body, []byte(secret)) {
			t.Errorf("GET /tokens shows a secret: %s", r.body)
		}
		var list struct {
			Tokens []map[string]any `json:"tokens"`
		}
		if err := json.Unmarshal(r.body, &list); err != nil {
			t.Fatal(err)
		}
		if len(list.Tokens) != 1 || list.Tokens[0]["token_id"] != id || list.Tokens[0]["name"] != "ci" {
			t.Fatalf("tokens = %v, want the one created", list.Tokens)
		}
		for _, k := range []string{"token", "hash"} {
			if _, ok := list.Tokens[0][k]; ok {
				t.Errorf("listed token has %q", k)
			}
		}

		r = ts.do(t, "DELETE", api("/tokens/"+id), nil)
		r.wantStatus(t, http.StatusNoContent)
		if len(r.body) != 0 {
			t.Errorf("204 has a body: %q", r.body)
		}
		ts.do(t, "GET", api("/tasks"), nil, withToken(secret)).wantError(t, http.StatusUnauthorized, wire.CodeUnauthorized)
		ts.do(t, "DELETE", api("/tokens/"+id), nil).wantError(t, http.StatusNotFound, wire.CodeNotFound)
	})

	t.Run("bad token requests", func(t *testing.T) {
		for _, b := range []string{`{"name":"","scopes":["admin"]}`, `{"name":"x","scopes":[]}`, `{"name":"x","scopes":["root"]}`} {
			ts.do(t, "POST", api("/tokens"), []byte(b)).wantError(t, http.StatusBadRequest, wire.CodeInvalidParams)
		}
	})

	t.Run("db check", func(t *testing.T) {
		r := ts.do(t, "GET", api("/admin/db/check"), nil)
		r.wantStatus(t, http.StatusOK)
		got := r.object(t)
		if got["ok"] != true {
			t.Errorf("check = %s, want ok true", r.body)
		}
		if errs, ok := got["errors"].([]any); !ok || len(errs) != 0 {
			t.Errorf("check errors = %v, want []", got["errors"])
		}
	})

	t.Run("backup", func(t *testing.T) {
		ts.do(t, "POST", api("/task?wait=5"), []byte(`{"task_type":"echo","payload":{"k":"v"}}`)).wantStatus(t, http.StatusOK)
		req, err := http.NewRequest("GET", ts.base+api("/admin/db/backup"), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := ts.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status = %d, want 200", resp.StatusCode)
		}
		if resp.ContentLength <= 0 {
			t.Fatalf("Content-Length = %d, want the file size", resp.ContentLength)
		}
		var buf bytes.Buffer
		n, err := buf.ReadFrom(resp.Body)
		if err != nil {
			t.Fatalf("read backup after %d bytes: %v", n, err)
		}
		if n != resp.ContentLength {
			t.Fatalf("read %d bytes, Content-Length %d", n, resp.ContentLength)
		}
		path := filepath.Join(t.TempDir(), "backup.db")
		if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		rep, err := store.CheckFile(context.Background(), path)
		if err != nil {
			t.Fatalf("CheckFile: %v", err)
		}
		if !rep.OK || rep.Tasks != 1 {
			t.Errorf("CheckFile = %+v, want OK with 1 task", rep)
		}
	})

	t.Run("admin routes need admin", func(t *testing.T) {
		w := createToken(t, ts, "writer", "tasks:write")
		for _, p := range []string{"/admin/db/check", "/admin/db/backup", "/tokens"} {
			ts.do(t, "GET", api(p), nil, withToken(w)).wantError(t, http.StatusForbidden, wire.CodePermissionDenied)
		}
	})
}
