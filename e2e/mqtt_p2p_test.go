package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/transport/mqtt/mqtttest"
)

// TestMQTTDelegation: two agents whose endpoints are only on the broker
// (mqtt:///{agent_id}: neither knows the other's HTTP address) pair and
// delegate tasks both ways; then a batch of delegations goes through a
// broker restart without persistence and the requester's kill -9, and
// every task completes, run once on the executor.
func TestMQTTDelegation(t *testing.T) {
	broker := mqtttest.Start(t, mqtttest.Options{})
	start := func(id string) *agentProc {
		cfg := filepath.Join(t.TempDir(), id+".json")
		writeJSON(t, cfg, map[string]any{
			"agent_id": id, "system_id": "plant-a", "endpoint": "mqtt:///" + id,
			"mqtt": map[string]any{"url": broker.URL(), "max_reconnect_ms": 300, "keepalive_seconds": 5, "answer_timeout_ms": 2000},
			"p2p":  map[string]any{"retry_base_delay_ms": 200, "max_retries": 30},
		})
		return startAgent(t, agentOpts{args: []string{"--config", cfg}})
	}
	a, b := start("gw-a"), start("gw-b")
	for _, x := range []struct {
		from *agentProc
		to   string
	}{{a, "gw-b"}, {b, "gw-a"}} {
		pairOverBroker(t, x.from, "mqtt:///"+x.to)
	}

	for _, x := range []struct {
		name     string
		from, on *agentProc
		target   string
	}{{"a to b", a, b, "gw-b"}, {"b to a", b, a, "gw-a"}} {
		t.Run(x.name, func(t *testing.T) {
			r := x.from.call(http.MethodPost, prefix+"/task?wait=30", []byte(`{"task_type":"echo","payload":{"over":"mqtt"},"target":"`+x.target+`"}`))
			var v taskView
			if r.status != http.StatusOK || json.Unmarshal(r.body, &v) != nil {
				t.Fatalf("POST /task?wait=30 with target: %s, want 200", r)
			}
			if v.Status != "completed" || v.ResultJSON != `{"over":"mqtt"}` {
				t.Fatalf("delegated task = %s %q, want completed with the echo", v.Status, v.ResultJSON)
			}
			if remote := x.on.task(v.TaskID); remote.Status != "completed" {
				t.Errorf("executor's task = %s", remote.Status)
			}
		})
	}

	// Faults while delegations are in flight.
	const n = 12
	var ids []string
	submit := func(from, to int) {
		for i := from; i < to; i++ {
			_, id := a.submit(http.StatusCreated, `{"task_type":"echo","payload":{"i":`+strconv.Itoa(i)+`},"target":"gw-b"}`)
			ids = append(ids, id)
		}
	}
	submit(0, n/3)
	broker.Restart()
	submit(n/3, 2*n/3)
	a.kill()
	a.start()
	submit(2*n/3, n)
	for i, id := range ids {
		v := a.waitTask(id, 60*time.Second, "final", taskView.terminal)
		if v.Status != "completed" || v.ResultJSON != fmt.Sprintf(`{"i":%d}`, i) {
			t.Errorf("task %d on the requester: %s %q", i, v.Status, v.ResultJSON)
		}
		remote := b.task(id)
		runs := 0
		for _, h := range remote.History {
			if h.Status == "executing" {
				runs++
			}
		}
		if remote.Status != "completed" || runs != 1 {
			t.Errorf("task %d on the executor: %s, run %d times", i, remote.Status, runs)
		}
	}
	testutil.Eventually(t, 30*time.Second, "both outboxes empty", func() bool {
		return len(outboxIDs(t, a, "pending", "gw-b")) == 0 && len(outboxIDs(t, b, "pending", "gw-a")) == 0
	})
}

// pairOverBroker pairs from with the agent at endpoint (mqtt:///ID), with
// the README's command, synapse peer add. The other agent answers the
// identity fetch only once it is connected and subscribed to its inbox,
// which a loaded machine may delay past the requester's answer timeout
// (502, unreached): like an operator, the test tries again then, and fails
// on any other refusal.
func pairOverBroker(t *testing.T, from *agentProc, endpoint string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, out, errOut := runCLI(t, 30*time.Second, "--agent", from.url(), "--token", from.token, "peer", "add", endpoint, "--json")
		switch {
		case code == 0 && strings.Contains(out, `"endpoint": "`+endpoint+`"`):
			return
		case code == 0:
			t.Fatalf("synapse peer add %s: the peer shown is not at %s:\n%s", endpoint, endpoint, out)
		case !strings.Contains(errOut, "(502)") || time.Now().After(deadline):
			t.Fatalf("synapse peer add %s: exit %d\n%s%s", endpoint, code, out, errOut)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
