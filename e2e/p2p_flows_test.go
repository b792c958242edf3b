package e2e_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
)

// pairedAgents starts two agents as processes and pairs them both ways.
func pairedAgents(t *testing.T) (a, b *agentProc, bID string) {
	t.Helper()
	config := filepath.Join(t.TempDir(), "p2p.json")
	writeJSON(t, config, map[string]any{"p2p": map[string]any{"heartbeat_interval_seconds": 1}})
	a = startAgent(t, agentOpts{args: []string{"--config", config}})
	b = startAgent(t, agentOpts{args: []string{"--config", config}})
	bID, _ = identityOf(t, b)
	for _, x := range [][2]*agentProc{{a, b}, {b, a}} {
		if r := x[0].call(http.MethodPost, prefix+"/agents", []byte(`{"endpoint":"`+x[1].url()+`"}`)); r.status != http.StatusCreated {
			t.Fatalf("POST /agents %s: %s", x[1].url(), r)
		}
	}
	return a, b, bID
}

func historyOf(v taskView) []string {
	var s []string
	for _, h := range v.History {
		s = append(s, h.Status)
	}
	return s
}

// TestP2PFlows runs the information-completion, human-intervention and
// cancel flows of seed 004 §4 between two agent processes.
func TestP2PFlows(t *testing.T) {
	a, b, bID := pairedAgents(t)
	const wait = 30 * time.Second

	t.Run("information completion", func(t *testing.T) {
		_, id := a.submit(http.StatusCreated, `{"task_type":"sleep","payload":{},"target":"`+bID+`"}`)
		v := a.waitTask(id, wait, "info_needed", func(v taskView) bool { return v.Status == "info_needed" })
		if len(v.MissingFields) != 1 || v.MissingFields[0].Field != "ms" {
			t.Fatalf("requester sees missing fields %+v, want ms", v.MissingFields)
		}
		if r := a.call(http.MethodPost, prefix+"/task/"+id+"/info", []byte(`{"fields":{"ms":5}}`)); r.status != http.StatusOK {
			t.Fatalf("POST /info: %s", r)
		}
		v = a.waitTask(id, wait, "final", taskView.terminal)
		if v.Status != "completed" || v.ResultJSON != `{"slept_ms":5}` {
			t.Errorf("requester: %s %q, want completed {\"slept_ms\":5}", v.Status, v.ResultJSON)
		}
		h := historyOf(v)
		if !slices.Contains(h, "info_needed") || !slices.Contains(h, "info_provided") {
			t.Errorf("requester history %v lacks info_needed/info_provided", h)
		}
		if remote := b.task(id); remote.Status != "completed" {
			t.Errorf("executor: %s", remote.Status)
		}
	})

	human := func(t *testing.T, action, want string) {
		_, id := a.submit(http.StatusCreated, `{"task_type":"confirm","payload":{"question":"open valve 3?"},"target":"`+bID+`"}`)
		a.waitTask(id, wait, "need_human", func(v taskView) bool { return v.Status == "need_human" })
		body := `{"action":"` + action + `","notes":"checked on site"}`
		if r := a.call(http.MethodPost, prefix+"/task/"+id+"/decision", []byte(body)); r.status != http.StatusOK {
			t.Fatalf("POST /decision: %s", r)
		}
		v := a.waitTask(id, wait, "final", taskView.terminal)
		if v.Status != want {
			t.Errorf("requester: %s, want %s (history %v)", v.Status, want, historyOf(v))
		}
		remote := b.waitTask(id, wait, "final", taskView.terminal)
		if remote.Status != want {
			t.Errorf("executor: %s, want %s", remote.Status, want)
		}
		if want == "completed" {
			var res struct {
				Notes string `json:"notes"`
			}
			if json.Unmarshal([]byte(remote.ResultJSON), &res) != nil || res.Notes != "checked on site" {
				t.Errorf("executor result %q lacks the requester's decision", remote.ResultJSON)
			}
		}
	}
	t.Run("human intervention, approved", func(t *testing.T) { human(t, "approve", "completed") })
	t.Run("human intervention, rejected", func(t *testing.T) { human(t, "reject", "rejected") })

	t.Run("cancel", func(t *testing.T) {
		_, id := a.submit(http.StatusCreated, `{"task_type":"sleep","payload":{"ms":60000},"target":"`+bID+`"}`)
		a.waitTask(id, wait, "executing", func(v taskView) bool { return v.Status == "executing" })
		if r := a.call(http.MethodPost, prefix+"/task/"+id+"/cancel", nil); r.status != http.StatusOK {
			t.Fatalf("POST /cancel: %s", r)
		}
		if v := a.waitTask(id, wait, "final", taskView.terminal); v.Status != "cancelled" {
			t.Errorf("requester: %s, want cancelled", v.Status)
		}
		if remote := b.waitTask(id, wait, "final", taskView.terminal); remote.Status != "cancelled" {
			t.Errorf("executor: %s, want cancelled", remote.Status)
		}
	})
}

// TestHILAcrossAgents is seed 004 §4.3 through the people's side of the
// requester: B's handler asks for a person; A's human-in-the-loop list
// (what A's console shows) has the request; the decision made there (what
// the console's buttons send) reaches B, and the task completes on both.
func TestHILAcrossAgents(t *testing.T) {
	a, b, bID := pairedAgents(t)
	_, id := a.submit(http.StatusCreated, `{"task_type":"confirm","payload":{"question":"flush line 2?"},"target":"`+bID+`"}`)
	var req struct {
		TaskID string `json:"task_id"`
		Target string `json:"target"`
		Reason struct {
			Message string `json:"message"`
		} `json:"reason"`
		EscalationLevel int `json:"escalation_level"`
	}
	testutil.Eventually(t, 30*time.Second, "the request in A's HiL list", func() bool {
		r := a.call(http.MethodGet, prefix+"/hil", nil)
		var list struct {
			Requests []json.RawMessage `json:"requests"`
		}
		if r.status != http.StatusOK || json.Unmarshal(r.body, &list) != nil {
			t.Fatalf("GET /hil: %s", r)
		}
		for _, raw := range list.Requests {
			if json.Unmarshal(raw, &req) == nil && req.TaskID == id {
				return true
			}
		}
		return false
	})
	if req.Target != bID || req.Reason.Message != "flush line 2?" || req.EscalationLevel != 1 {
		t.Errorf("A's request = %+v, want B's question at level 1", req)
	}
	if r := a.call(http.MethodPost, prefix+"/hil/"+id+"/decision", []byte(`{"action":"approve","notes":"line is empty"}`)); r.status != http.StatusOK {
		t.Fatalf("POST /hil/%s/decision: %s", id, r)
	}
	if v := a.waitTask(id, 30*time.Second, "final", taskView.terminal); v.Status != "completed" {
		t.Errorf("requester: %s, want completed", v.Status)
	}
	remote := b.waitTask(id, 30*time.Second, "final", taskView.terminal)
	if remote.Status != "completed" || !json.Valid([]byte(remote.ResultJSON)) {
		t.Errorf("executor: %s %q", remote.Status, remote.ResultJSON)
	}
}
