package e2e_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
)

// TestDelegatedDeadline: with p2p.task_timeout_seconds 2 the requester
// sends task.deadline; a task still running there at the deadline ends
// failed with execution_timeout on both sides (SPEC §5.1 has no timed_out
// state). A request that reaches the executor only after its deadline
// fails there at once, and the requester has ended it itself.
func TestDelegatedDeadline(t *testing.T) {
	config := filepath.Join(t.TempDir(), "deadline.json")
	writeJSON(t, config, map[string]any{"p2p": map[string]any{"task_timeout_seconds": 2, "heartbeat_interval_seconds": 1, "retry_base_delay_ms": 100}})
	a := startAgent(t, agentOpts{args: []string{"--config", config}})
	b := startAgent(t, agentOpts{})
	bID, _ := identityOf(t, b)
	pairBoth(t, a, b)
	timedOut := func(v taskView) bool { return v.Status == "failed" && v.ErrorCode == "execution_timeout" }
	const wait = 20 * time.Second

	t.Run("running at the deadline", func(t *testing.T) {
		start := time.Now()
		_, id := a.submit(http.StatusCreated, `{"task_type":"sleep","payload":{"ms":30000},"target":"`+bID+`"}`)
		testutil.Eventually(t, wait, "the task executing on the executor", func() bool {
			var v taskView
			r := b.call(http.MethodGet, prefix+"/task/"+id, nil)
			return r.status == http.StatusOK && json.Unmarshal(r.body, &v) == nil && v.Status == "executing"
		})
		a.waitTask(id, wait, "failed execution_timeout", timedOut)
		b.waitTask(id, wait, "failed execution_timeout", timedOut)
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("ended after %v, want about 2 s", d)
		}
		var got struct {
			Deadline string `json:"deadline"`
		}
		if r := b.call(http.MethodGet, prefix+"/task/"+id, nil); r.status != http.StatusOK || jsonField(r.body, &got) != nil || got.Deadline == "" {
			t.Errorf("the executor's task shows no deadline: %s", r)
		}
	})
	t.Run("arriving after the deadline", func(t *testing.T) {
		b.kill()
		_, id := a.submit(http.StatusCreated, `{"task_type":"echo","payload":{},"target":"`+bID+`"}`)
		a.waitTask(id, wait, "failed execution_timeout", timedOut)
		b.start()
		testutil.Eventually(t, wait, "the late request on the executor", func() bool {
			r := b.call(http.MethodGet, prefix+"/task/"+id, nil)
			return r.status == http.StatusOK
		})
		b.waitTask(id, wait, "failed execution_timeout", timedOut)
	})
}

// jsonField decodes body into v.
func jsonField(body []byte, v any) error { return json.Unmarshal(body, v) }
