package e2e_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/transport/mqtt/mqtttest"
)

// TestMQTTCloudBackendCommands: a cloud backend that is not an agent (a
// plain MQTT client with its own Ed25519 key, cloudBackend) is paired by
// the agent's operator, negotiates a contract, submits a task by
// publishing a signed task_request to the agent's inbox, and follows it
// through the task events on {prefix}/{system_id}/{agent_id}/events while
// the agent is killed with -9 mid-task and restarted; the result comes to
// its inbox as a signed task_complete, once per message id. Forged,
// unsigned and contract-less requests are refused and a repeated one is a
// duplicate, never a second task.
func TestMQTTCloudBackendCommands(t *testing.T) {
	broker := mqtttest.Start(t, mqtttest.Options{TCPNoDelay: true})
	backend := startBackend(t, broker.Addr, "cloud-1", "plant-a")
	cfg := filepath.Join(t.TempDir(), "gw-1.json")
	writeJSON(t, cfg, map[string]any{
		"agent_id": "gw-1", "system_id": "plant-a", "endpoint": "mqtt:///gw-1",
		"mqtt": map[string]any{"url": broker.URL(), "task_events": true, "max_reconnect_ms": 300,
			"keepalive_seconds": 5, "answer_timeout_ms": 2000},
		"p2p": map[string]any{"retry_base_delay_ms": 200, "max_retries": 30},
	})
	a := startAgent(t, agentOpts{args: []string{"--config", cfg}})
	defer func() {
		if t.Failed() {
			backend.mu.Lock()
			t.Logf("backend refused: %v; got %d envelopes, %d events", backend.bad, len(backend.got), len(backend.events))
			backend.mu.Unlock()
		}
	}()

	// The backend pins the agent's key (its identity, fetched through the
	// inbox); the agent's operator pairs the backend, which fetches the
	// backend's identity the same way.
	testutil.Eventually(t, 20*time.Second, "the agent's identity through its inbox", func() bool { return backend.pin("gw-1") })
	pairOverBroker(t, a, "mqtt:///cloud-1")

	task := func(id string, ms int) map[string]any {
		return map[string]any{"task": map[string]any{"id": id, "type": "sleep", "payload": map[string]int{"ms": ms}}}
	}
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	refused := []struct {
		name string
		e    *backendEnvelope
		want int
	}{
		{"signed by another key", backend.envelope("p2p:task_request", "gw-1", "", task(newUUID(), 1), otherKey), 401},
		{"unsigned", func() *backendEnvelope {
			e := backend.envelope("p2p:task_request", "gw-1", "", task(newUUID(), 1), backend.priv)
			e.Signature = ""
			return e
		}(), 401},
		{"no contract yet", backend.envelope("p2p:task_request", "gw-1", "", task(newUUID(), 1), backend.priv), 428},
	}
	for _, x := range refused {
		if ans := backend.send("gw-1", x.e); ans.status != x.want {
			t.Errorf("task_request %s: answered %d %s, want %d", x.name, ans.status, ans.body, x.want)
		}
	}

	// A contract: one negotiate_request, the contract in the answer (a
	// signed negotiate_response).
	ans := backend.send("gw-1", backend.envelope("negotiate_request", "gw-1", "", map[string]any{
		"candidate_transports": []map[string]string{{"protocol": "native_tp"}},
		"candidate_tiers":      []string{"tier_3_natural_language"},
	}, backend.priv))
	var resp backendEnvelope
	var contract struct {
		ContractID    string `json:"contract_id"`
		SecurityLevel string `json:"security_level"`
	}
	if ans.status != 200 || json.Unmarshal(ans.body, &resp) != nil || resp.MessageType != "negotiate_response" ||
		!resp.verify(backend.keys["gw-1"]) || json.Unmarshal(resp.Payload, &contract) != nil || contract.ContractID == "" {
		t.Fatalf("negotiate_request: answered %d %.500s, want 200 with a negotiate_response signed by gw-1", ans.status, ans.body)
	}
	if contract.SecurityLevel != "basic" {
		t.Errorf("contract security level %q, want basic (same system)", contract.SecurityLevel)
	}

	// The command: a sleep long enough for the kill below to come
	// mid-task, also under an emulator.
	taskID := newUUID()
	req := backend.envelope("p2p:task_request", "gw-1", contract.ContractID, task(taskID, 3000), backend.priv)
	if ans := backend.send("gw-1", req); ans.status != http.StatusAccepted {
		t.Fatalf("task_request: answered %d %s, want 202", ans.status, ans.body)
	}
	if ans := backend.send("gw-1", req); ans.status != http.StatusOK || !strings.Contains(string(ans.body), `"duplicate":true`) {
		t.Errorf("the same task_request again: answered %d %s, want 200 duplicate", ans.status, ans.body)
	}
	testutil.Eventually(t, 20*time.Second, "an executing event for the task", func() bool {
		for _, ev := range backend.taskEvents(taskID) {
			if ev.EventType == "status_update" && strings.Contains(string(ev.Data), `"status":"executing"`) {
				return true
			}
		}
		return false
	})
	a.kill() // mid-task
	a.start()

	testutil.Eventually(t, 30*time.Second, "the task_complete in the backend's inbox", func() bool {
		return len(backend.received("p2p:task_complete", taskID)) > 0
	})
	done := backend.received("p2p:task_complete", taskID)
	var result struct {
		Result struct {
			Output json.RawMessage `json:"output"`
		} `json:"result"`
	}
	if len(done) != 1 || json.Unmarshal(done[0].Payload, &result) != nil || string(result.Result.Output) != `{"slept_ms":3000}` {
		t.Fatalf("task_complete messages: %+v, want one with output {\"slept_ms\":3000}", done)
	}
	if len(backend.received("p2p:task_confirm", taskID)) != 1 {
		t.Errorf("task_confirm: got %d distinct messages, want 1", len(backend.received("p2p:task_confirm", taskID)))
	}
	testutil.Eventually(t, 10*time.Second, "the complete event", func() bool {
		for _, ev := range backend.taskEvents(taskID) {
			if ev.EventType == "complete" {
				return true
			}
		}
		return false
	})
	if ans := backend.send("gw-1", backend.envelope("p2p:task_ack", "gw-1", contract.ContractID,
		map[string]string{"task_id": taskID, "acked_type": "p2p:task_complete"}, backend.priv)); ans.status/100 != 2 {
		t.Errorf("task_ack: answered %d %s", ans.status, ans.body)
	}

	// On the agent: the one task, completed (run again after the
	// restart: sleep is idempotent), nothing left for the backend, and
	// none of the refused requests became a task.
	v := a.task(taskID)
	if v.Status != "completed" {
		t.Errorf("the task on the agent: %s, want completed", v.Status)
	}
	// Killed mid-task: the restarted agent took it over (and ran it again:
	// sleep is idempotent).
	if logs := a.stderr(); !strings.Contains(logs, `msg="took over unfinished tasks" count=1`) {
		t.Errorf("the restarted agent did not take over the task:\n%s", logs)
	}
	r := a.call(http.MethodGet, prefix+"/tasks?limit=100", nil)
	var list struct {
		Tasks []struct {
			TaskID string `json:"task_id"`
		} `json:"tasks"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &list) != nil || len(list.Tasks) != 1 || list.Tasks[0].TaskID != taskID {
		t.Errorf("the agent's tasks: %s, want only %s", r, taskID)
	}
	testutil.Eventually(t, 20*time.Second, "the agent's outbox to the backend empty", func() bool {
		return len(outboxIDs(t, a, "pending", "cloud-1")) == 0
	})
	var seqs []string
	for _, ev := range backend.taskEvents(taskID) {
		seqs = append(seqs, fmt.Sprintf("%d:%s", ev.Seq, ev.EventType))
	}
	t.Logf("events seen by the backend: %v", seqs)
}
