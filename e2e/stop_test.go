package e2e_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSIGTERMWithTaskWaitingForPerson: a task parked waiting for a person
// (the confirm handler, in need_human) does not hold a stopping agent for
// its grace period: it is on disk and waits there anyway. The agent exits
// at once, the task is in need_human after the restart, and the decision
// completes it. The JSON log writes the grace period as "1m0s", not in
// nanoseconds.
func TestSIGTERMWithTaskWaitingForPerson(t *testing.T) {
	const grace = time.Minute
	a := startAgent(t, agentOpts{args: []string{"--grace", grace.String(), "--log-format", "json"}})
	_, id := a.submit(http.StatusCreated, `{"task_type":"confirm","payload":{"question":"open valve 3?"}}`)
	a.waitTask(id, 10*time.Second, "need_human", func(v taskView) bool { return v.Status == "need_human" })

	code, took := a.term()
	logs := a.stderr()
	if code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0\n%s", code, logs)
	}
	t.Logf("exited %s after SIGTERM (grace %s)", took.Round(time.Millisecond), grace)
	// It used to take the whole grace period (past agenttest.StopTimeout,
	// so the harness killed it); half of it leaves a loaded machine every
	// margin.
	if took >= grace/2 {
		t.Errorf("the stop took %s with a task waiting for a person, want well under the grace period %s", took, grace)
	}

	t.Run("JSON log durations are readable", func(t *testing.T) {
		found := false
		sc := bufio.NewScanner(strings.NewReader(logs))
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) != nil || line["msg"] != "shutting down" {
				continue
			}
			found = true
			if got, want := line["grace"], "1m0s"; got != want {
				t.Errorf("shutting down: grace = %#v, want %q", got, want)
			}
		}
		if !found {
			t.Errorf("no JSON \"shutting down\" line in the log:\n%s", logs)
		}
	})

	a.start()
	if v := a.task(id); v.Status != "need_human" {
		t.Fatalf("after the restart the task is %q, want need_human", v.Status)
	}
	if r := a.call(http.MethodPost, prefix+"/hil/"+id+"/decision", []byte(`{"action":"approve"}`)); r.status != http.StatusOK {
		t.Fatalf("POST /hil/%s/decision: %s", id, r)
	}
	if v := a.waitTask(id, 20*time.Second, "final", taskView.terminal); v.Status != "completed" {
		t.Errorf("after the decision the task is %q, want completed", v.Status)
	}
	a.stop()
}
