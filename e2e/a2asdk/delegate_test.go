package a2asdk_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/client/agenttest"
	"github.com/synapse-edge/synapse/internal/testutil"
)

// TestDelegateOverA2A: agent A delegates tasks (target) to agent B under
// a contract that selects a2a_jsonrpc. The task requests reach B as A2A
// SendMessage calls on its /a2a (with a token B issued for A, from A's
// a2a.peers config), and their outcomes come back into A's tasks; a task
// still running on B when A is killed (kill -9) is finished on A after
// its restart.
func TestDelegateOverA2A(t *testing.T) {
	b := startSynapse(t, `{"negotiation": {"transports": ["a2a_jsonrpc", "native_tp"]}}`)
	var bID struct {
		AgentID string `json:"agent_id"`
	}
	if st, body := b.call(t, http.MethodGet, apiPrefix+"/identity", nil); st != http.StatusOK || json.Unmarshal(body, &bID) != nil || bID.AgentID == "" {
		t.Fatalf("B's identity: %d %s", st, body)
	}
	var tok struct {
		Token string `json:"token"`
	}
	st, body := b.call(t, http.MethodPost, apiPrefix+"/tokens", map[string]any{"name": "agent-a", "scopes": []string{"tasks:read", "tasks:write"}})
	if st != http.StatusCreated || json.Unmarshal(body, &tok) != nil || tok.Token == "" {
		t.Fatalf("token on B: %d %s", st, body)
	}
	cfg := filepath.Join(t.TempDir(), "a.json")
	if err := os.WriteFile(cfg, []byte(`{"negotiation": {"transports": ["a2a_jsonrpc", "native_tp"]},
		"a2a": {"peers": [{"agent_id": "`+bID.AgentID+`", "token_env": "B_A2A_TOKEN"}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := agenttest.Options{DataDir: t.TempDir(), Args: []string{"--config", cfg},
		Env: []string{"B_A2A_TOKEN=" + tok.Token, "SYNAPSE_OUTBOUND_ALLOW=127.0.0.0/8"}}
	aa := agenttest.Start(t, synapseBin, opts)
	a := &target{name: "A", base: aa.URL, token: aa.Token}
	for _, x := range [][2]*target{{a, b}, {b, a}} {
		if st, body := x[0].call(t, http.MethodPost, apiPrefix+"/agents", map[string]string{"endpoint": x[1].base}); st != http.StatusCreated {
			t.Fatalf("pair: %d %s", st, body)
		}
	}
	if st, body := a.call(t, http.MethodPost, apiPrefix+"/negotiate", map[string]string{"peer": bID.AgentID}); st != http.StatusCreated || !strings.Contains(string(body), `"a2a_jsonrpc"`) {
		t.Fatalf("negotiate: %d %s", st, body)
	}

	submit := func(t *testing.T, a *target, taskType, payload string) string {
		t.Helper()
		var sub struct {
			TaskID string `json:"task_id"`
		}
		st, body := a.call(t, http.MethodPost, apiPrefix+"/task", map[string]any{"task_type": taskType,
			"payload": json.RawMessage(payload), "target": bID.AgentID})
		if st != http.StatusCreated || json.Unmarshal(body, &sub) != nil || sub.TaskID == "" {
			t.Fatalf("submit to B: %d %s", st, body)
		}
		return sub.TaskID
	}
	type task struct {
		Status string          `json:"status"`
		Result json.RawMessage `json:"result"`
		Target string          `json:"target"`
	}
	get := func(t *testing.T, a *target, id string) task {
		t.Helper()
		var tk task
		if st, body := a.call(t, http.MethodGet, apiPrefix+"/task/"+id, nil); st != http.StatusOK || json.Unmarshal(body, &tk) != nil {
			t.Fatalf("task %s: %d %s", id, st, body)
		}
		return tk
	}

	echo := submit(t, a, "echo", `{"msg":"over a2a"}`)
	var got task
	testutil.Eventually(t, 20*time.Second, "the delegated echo completed on A", func() bool {
		got = get(t, a, echo)
		return got.Status == "completed" || got.Status == "failed"
	})
	if got.Status != "completed" || !jsonEqual(t, string(got.Result), `{"msg":"over a2a"}`) || got.Target != bID.AgentID {
		t.Fatalf("A's task %+v, want completed with the echoed payload, target B", got)
	}
	// B ran it as an A2A task, created with A's token.
	var list struct {
		Tasks []struct {
			ID      string          `json:"task_id"`
			Owner   string          `json:"owner"`
			Payload json.RawMessage `json:"payload"`
		} `json:"tasks"`
	}
	if st, body := b.call(t, http.MethodGet, apiPrefix+"/tasks", nil); st != http.StatusOK || json.Unmarshal(body, &list) != nil || len(list.Tasks) != 1 {
		t.Fatalf("B's tasks: %d %s, want one", st, body)
	}
	if list.Tasks[0].ID == echo {
		t.Errorf("B's task has A's id %s: it came as a native task_request, not over A2A", echo)
	}

	// A stops while B runs the task; after A's restart its task finishes.
	sleep := submit(t, a, "sleep", `{"ms":1500}`)
	testutil.Eventually(t, 20*time.Second, "the sleep task running on B", func() bool {
		s := get(t, a, sleep).Status
		return s == "confirmed" || s == "executing"
	})
	aa.Kill(t) // kill -9: what A knows of the remote task is what it wrote
	aa.Start(t)
	testutil.Eventually(t, 20*time.Second, "the sleep task completed on A after its restart", func() bool {
		got = get(t, a, sleep)
		return got.Status == "completed" || got.Status == "failed"
	})
	if got.Status != "completed" || !jsonEqual(t, string(got.Result), `{"slept_ms":1500}`) {
		t.Errorf("A's sleep task %+v, want completed with slept_ms 1500", got)
	}
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(t *testing.T, got, want string) bool {
	t.Helper()
	var g, w any
	if json.Unmarshal([]byte(got), &g) != nil || json.Unmarshal([]byte(want), &w) != nil {
		return false
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return string(gb) == string(wb)
}
