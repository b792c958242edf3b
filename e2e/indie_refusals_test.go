package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
)

// TestIndependentPeerRefusals (issue #30, "What it must show" 1): a peer
// written from SPEC §2–3 and the seeds alone (indiePeer, importing nothing
// of this module) pairs with the real binary, negotiates a contract and
// delegates to it, and gets the seeds' answers where the agent refuses:
// an unknown type (400 unknown_type), illegal transitions (409, nothing
// changes), a request over max_concurrent_tasks (task_reject with 4004
// and a retry hint), a task stopped at its maximum duration (task_failed
// with 2004), and task_need_human with its deadline and options. As the
// executor of a task the agent delegated to it, its task_reject after its
// task_confirm is refused (409).
func TestIndependentPeerRefusals(t *testing.T) {
	indie := startIndiePeer(t, "indie-1", "plant-a")
	cfg := filepath.Join(t.TempDir(), "gw-1.json")
	writeJSON(t, cfg, map[string]any{
		"agent_id": "gw-1", "system_id": "plant-a",
		"max_concurrent_tasks": 1, "max_task_duration_seconds": 5,
		"p2p": map[string]any{"retry_base_delay_ms": 200, "max_retries": 30},
	})
	a := startAgent(t, agentOpts{args: []string{"--config", cfg}})
	gw := indie.pin(a.url())
	if r := a.call(http.MethodPost, prefix+"/agents", []byte(`{"endpoint":"`+indie.endpoint+`"}`)); r.status != http.StatusCreated {
		t.Fatalf("pair the independent peer: %s", r)
	}

	// A contract: a negotiate_request, answered with a signed
	// negotiate_response that holds it.
	ans := indie.send(a.url(), indie.envelope("negotiate_request", gw, "", map[string]any{
		"candidate_transports": []map[string]string{{"protocol": "native_tp"}},
		"candidate_tiers":      []string{"tier_3_natural_language"},
	}))
	var resp indieEnvelope
	var contract struct {
		ContractID string `json:"contract_id"`
	}
	if ans.status != http.StatusOK || json.Unmarshal(ans.body, &resp) != nil || resp.MessageType != "negotiate_response" ||
		json.Unmarshal(resp.Payload, &contract) != nil || contract.ContractID == "" {
		t.Fatalf("negotiate_request: %s, want 200 with a negotiate_response", ans)
	}
	cid := contract.ContractID
	request := func(id, typ string, payload any) indieAnswer {
		return indie.send(a.url(), indie.envelope("p2p:task_request", gw, cid, map[string]any{
			"task": map[string]any{"id": id, "type": typ, "payload": payload, "deadline": indieTime(time.Now().Add(5 * time.Minute))}}))
	}

	t.Run("unknown type", func(t *testing.T) {
		ans := indie.send(a.url(), indie.envelope("p2p:task_canceled", gw, cid, map[string]string{"task_id": uuidV7()}))
		var b struct {
			Error struct {
				Details map[string]any `json:"details"`
			} `json:"error"`
		}
		_ = json.Unmarshal(ans.body, &b)
		if ans.status != http.StatusBadRequest || ans.errorCode() != "message_format_invalid" || b.Error.Details["reason"] != "unknown_type" {
			t.Errorf("a misspelt type: %s, want 400 message_format_invalid, reason unknown_type", ans)
		}
	})

	t.Run("illegal transitions", func(t *testing.T) {
		done := uuidV7()
		if ans := request(done, "echo", map[string]int{"n": 1}); ans.status != http.StatusAccepted {
			t.Fatalf("task_request: %s, want 202", ans)
		}
		indie.await("p2p:task_complete", done, 30*time.Second, nil)
		before := a.task(done)
		for _, c := range []struct {
			name, typ string
			payload   any
			want      string
		}{
			{"cancel of a completed task", "p2p:task_cancel", map[string]string{"task_id": done}, "task_already_completed"},
			{"information for a completed task", "p2p:task_info_provided", map[string]any{"task_id": done, "fields": map[string]int{"n": 2}}, "invalid_state_transition"},
			{"decision on a completed task", "p2p:human_decision", map[string]any{"task_id": done, "decision_id": uuidV7(),
				"decided_by": map[string]string{"user_id": "u1"}, "decision": map[string]string{"action": "approve"}}, "invalid_state_transition"},
		} {
			if ans := indie.send(a.url(), indie.envelope(c.typ, gw, cid, c.payload)); ans.status != http.StatusConflict || ans.errorCode() != c.want {
				t.Errorf("%s: %s, want 409 %s", c.name, ans, c.want)
			}
		}
		if after := a.task(done); after.Status != "completed" || len(after.History) != len(before.History) {
			t.Errorf("the refused messages changed the task: %s with %d transitions, was %d", after.Status, len(after.History), len(before.History))
		}
		if ans := indie.send(a.url(), indie.envelope("p2p:task_info_provided", gw, cid, map[string]any{"fields": map[string]int{"n": 2}})); ans.status != http.StatusBadRequest ||
			!json.Valid(ans.body) || !bodyNames(ans.body, "task_id") {
			t.Errorf("task_info_provided without task_id: %s, want 400 naming task_id", ans)
		}
	})

	t.Run("need_human carries deadline and options", func(t *testing.T) {
		id := uuidV7()
		sent := time.Now()
		if ans := request(id, "confirm", map[string]string{"question": "ship it?"}); ans.status != http.StatusAccepted {
			t.Fatalf("task_request: %s, want 202", ans)
		}
		var nh struct {
			Deadline string `json:"deadline"`
			Options  []struct {
				Field string `json:"field"`
				Value any    `json:"value"`
			} `json:"options"`
		}
		indie.await("p2p:task_need_human", id, 30*time.Second, &nh)
		dl, err := time.Parse(time.RFC3339Nano, nh.Deadline)
		if err != nil || !dl.After(sent) || dl.After(sent.Add(5*time.Minute+time.Second)) {
			t.Errorf("need_human deadline %q: want a time after the request and not after its deadline", nh.Deadline)
		}
		var values []any
		for _, o := range nh.Options {
			values = append(values, o.Value)
		}
		if len(values) != 2 || values[0] != "approve" || values[1] != "reject" {
			t.Errorf("need_human options %+v, want approve and reject", nh.Options)
		}
		if ans := indie.send(a.url(), indie.envelope("p2p:human_decision", gw, cid, map[string]any{"task_id": id, "decision_id": uuidV7(),
			"decided_by": map[string]string{"user_id": "u1"}, "decision": map[string]string{"action": "approve"}, "timestamp": indieTime(time.Now())})); ans.status != http.StatusAccepted {
			t.Fatalf("human_decision: %s, want 202", ans)
		}
		indie.await("p2p:task_complete", id, 30*time.Second, nil)
	})

	t.Run("over max_concurrent_tasks, then past the maximum duration", func(t *testing.T) {
		long, busy := uuidV7(), uuidV7()
		if ans := request(long, "sleep", map[string]int{"ms": 60000}); ans.status != http.StatusAccepted {
			t.Fatalf("task_request: %s, want 202", ans)
		}
		indie.await("p2p:task_confirm", long, 30*time.Second, nil)
		if ans := request(busy, "sleep", map[string]int{"ms": 1}); ans.status != http.StatusAccepted {
			t.Fatalf("the request over the limit: %s, want 202 and a task_reject", ans)
		}
		var rej struct {
			Reason struct {
				Code    string         `json:"code"`
				Details map[string]any `json:"details"`
			} `json:"reason"`
			Alternatives struct {
				RetryAfter int `json:"retry_after"`
			} `json:"alternatives"`
		}
		indie.await("p2p:task_reject", busy, 30*time.Second, &rej)
		if rej.Reason.Code != "rate_limited" || rej.Reason.Details["numeric_code"] != float64(4004) || rej.Alternatives.RetryAfter < 1 {
			t.Errorf("task_reject over the limit: %+v, want rate_limited, numeric_code 4004, retry_after", rej)
		}
		var failed struct {
			Error struct {
				Code    string         `json:"code"`
				Details map[string]any `json:"details"`
			} `json:"error"`
		}
		indie.await("p2p:task_failed", long, 30*time.Second, &failed)
		if failed.Error.Code != "execution_timeout" || failed.Error.Details["numeric_code"] != float64(2004) {
			t.Errorf("task_failed at the maximum duration: %+v, want execution_timeout, numeric_code 2004", failed)
		}
		var v struct {
			NumericCode int `json:"numeric_code"`
		}
		if r := a.call(http.MethodGet, prefix+"/task/"+long, nil); json.Unmarshal(r.body, &v) != nil || v.NumericCode != 2004 {
			t.Errorf("GET /task of the task stopped at its maximum duration: %s, want numeric_code 2004", r)
		}
	})

	t.Run("a report the state machine forbids", func(t *testing.T) {
		// The agent delegates to the independent peer, which confirms and
		// then rejects: the reject is refused, the task goes on.
		_, id := a.submit(http.StatusCreated, `{"task_type":"echo","payload":{"n":1},"target":"`+indie.id+`"}`)
		var req struct {
			Context struct {
				Metadata map[string]any `json:"metadata"`
			} `json:"context"`
		}
		indie.await("p2p:task_request", id, 30*time.Second, &req)
		if req.Context.Metadata["queue_when_busy"] != true {
			t.Errorf("the agent's task_request metadata %v, want queue_when_busy", req.Context.Metadata)
		}
		if ans := indie.send(a.url(), indie.envelope("p2p:task_confirm", gw, cid, map[string]any{"task_id": id, "confirmed": true})); ans.status != http.StatusAccepted {
			t.Fatalf("task_confirm: %s, want 202", ans)
		}
		ans := indie.send(a.url(), indie.envelope("p2p:task_reject", gw, cid, map[string]any{"task_id": id,
			"reason": map[string]string{"code": "capability_lacking", "message": "changed my mind"}}))
		if ans.status != http.StatusConflict || ans.errorCode() != "invalid_state_transition" {
			t.Errorf("task_reject after task_confirm: %s, want 409 invalid_state_transition", ans)
		}
		if v := a.task(id); v.Status != "confirmed" {
			t.Errorf("the delegated task after the refused reject: %s, want confirmed", v.Status)
		}
		if ans := indie.send(a.url(), indie.envelope("p2p:task_complete", gw, cid, map[string]any{"task_id": id,
			"result": map[string]any{"output_type": "json", "output": map[string]int{"n": 1}}})); ans.status != http.StatusAccepted {
			t.Fatalf("task_complete: %s, want 202", ans)
		}
		a.waitTask(id, 30*time.Second, "completed", func(v taskView) bool { return v.Status == "completed" })
	})

	t.Run("the agent's cancel refused by the peer", func(t *testing.T) {
		// The peer answers the agent's task_cancel 409
		// task_already_completed (the cancel crossed the outcome): the
		// agent takes it as the answer, not a dead letter.
		_, id := a.submit(http.StatusCreated, `{"task_type":"echo","payload":{"n":2},"target":"`+indie.id+`"}`)
		indie.await("p2p:task_request", id, 30*time.Second, nil)
		indie.mu.Lock()
		indie.refuse = func(e indieEnvelope) (int, string) {
			if e.MessageType == "p2p:task_cancel" {
				return http.StatusConflict, "task_already_completed"
			}
			return 0, ""
		}
		indie.mu.Unlock()
		// The cancel waits up to 10 s for the peer's confirmation, which
		// does not come: a client that waits longer.
		hc := newClient(1, 30*time.Second)
		defer hc.CloseIdleConnections()
		if r, err := a.send(context.Background(), hc, http.MethodPost, prefix+"/task/"+id+"/cancel", nil); err != nil || r.status/100 != 2 {
			t.Fatalf("POST /task/%s/cancel: %v %s", id, err, r)
		}
		indie.await("p2p:task_cancel", id, 30*time.Second, nil)
		testutil.Eventually(t, 30*time.Second, "the agent's outbox to the peer empty", func() bool {
			return len(outboxIDs(t, a, "pending", indie.id)) == 0
		})
		if dead := outboxIDs(t, a, "dead", indie.id); len(dead) != 0 {
			t.Errorf("dead letters to the peer after its 409: %v, want none", dead)
		}
		if ans := indie.send(a.url(), indie.envelope("p2p:task_complete", gw, cid, map[string]any{"task_id": id,
			"result": map[string]any{"output_type": "json", "output": map[string]int{"n": 2}}})); ans.status != http.StatusAccepted {
			t.Fatalf("task_complete: %s, want 202", ans)
		}
	})
}

// bodyNames reports whether a TPError body names key in details.field.
func bodyNames(body []byte, key string) bool {
	var b struct {
		Error struct {
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	return json.Unmarshal(body, &b) == nil && b.Error.Details["field"] == key
}
