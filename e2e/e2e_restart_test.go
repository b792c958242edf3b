package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRestartRules checks SIGKILL recovery (SPEC §5.5): a task of an
// idempotent handler (sleep) runs again, a task of a command handler that
// is not idempotent fails with agent_restarted, recoverable.
func TestRestartRules(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "slow.pid")
	config := filepath.Join(dir, "synapse.json")
	writeJSON(t, config, map[string]any{
		"handlers": []map[string]any{{
			"task_type": "slow",
			"command":   []string{"sh", "-c", "echo $$ > '" + pidFile + "'; exec sleep 60"},
		}},
	})
	a := startAgent(t, agentOpts{args: []string{"--config", config, "--grace", "2s"}})

	_, sleepID := a.submit(http.StatusCreated, `{"task_type":"sleep","payload":{"ms":60000}}`)
	_, slowID := a.submit(http.StatusCreated, `{"task_type":"slow","payload":{}}`)
	isExecuting := func(v taskView) bool { return v.Status == "executing" }
	a.waitTask(sleepID, 10*time.Second, "executing", isExecuting)
	a.waitTask(slowID, 10*time.Second, "executing", isExecuting)
	// The command has started when it has written its pid.
	pid := waitPIDFile(t, pidFile, 10*time.Second)
	t.Cleanup(func() { checkNoOrphan(t, pid) })

	a.kill()
	a.start()

	t.Run("non-idempotent command fails with agent_restarted", func(t *testing.T) {
		v := a.waitTask(slowID, 10*time.Second, "final", taskView.terminal)
		if v.Status != "failed" || v.ErrorCode != "agent_restarted" || !v.Recoverable {
			t.Errorf("got status %q error_code %q recoverable %v, want failed agent_restarted true", v.Status, v.ErrorCode, v.Recoverable)
		}
	})

	t.Run("idempotent sleep runs again", func(t *testing.T) {
		v := a.task(sleepID)
		if v.Status != "executing" {
			t.Fatalf("got status %q after restart, want executing", v.Status)
		}
		evs := a.events(sleepID, 10*time.Second, func(e sseEvent) bool {
			return e.typ == "log" && strings.Contains(e.data, "agent restarted")
		})
		if len(evs) == 0 || evs[len(evs)-1].typ != "log" || !strings.Contains(evs[len(evs)-1].data, "agent restarted") {
			t.Fatalf("the stream has no log event of the re-run; got %v", evs)
		}
		// Only a task that really runs again can be cancelled: a record
		// left executing with no handler behind it would stay executing.
		r := a.call(http.MethodPost, prefix+"/task/"+sleepID+"/cancel", nil)
		if r.status != http.StatusOK {
			t.Fatalf("cancel: got %s, want 200", r)
		}
		v = a.waitTask(sleepID, 10*time.Second, "final", taskView.terminal)
		if v.Status != "cancelled" {
			t.Errorf("got status %q after cancel, want cancelled", v.Status)
		}
	})

	a.stop()
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func waitPIDFile(t *testing.T, path string, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not written within %s", path, timeout)
		}
		time.Sleep(pollEvery) // poll interval
	}
}

// checkNoOrphan fails unless the "sleep 60" of a command handler dies with
// the agent that was killed (the handler's child gets SIGKILL through
// Pdeathsig); a zombie waiting for init to reap it counts as dead.
func checkNoOrphan(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		zombie := bytes.Contains(stat, []byte(") Z "))
		if err != nil || zombie || !bytes.HasPrefix(cmdline, []byte("sleep\x0060")) {
			return
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the slow command (pid %d) outlived the killed agent", pid)
		}
		time.Sleep(pollEvery) // poll interval
	}
}

// TestSecondServeOnSameDataDir checks the data directory lock (SPEC §11).
func TestSecondServeOnSameDataDir(t *testing.T) {
	a := startAgent(t, agentOpts{})
	start := time.Now()
	code, _, errOut := runCLI(t, 15*time.Second, "serve", "--data", a.dataDir, "--listen", freeAddr(t))
	took := time.Since(start)
	if code == 0 {
		t.Errorf("second serve exited 0, want non-zero")
	}
	if took > 5*time.Second {
		t.Errorf("second serve took %s to exit, want under 5s", took.Round(time.Millisecond))
	}
	if !strings.Contains(errOut, "in use") {
		t.Errorf("second serve's stderr does not say the directory is in use:\n%s", errOut)
	}
	if r := a.call(http.MethodGet, prefix+"/health", nil); r.status != http.StatusOK {
		t.Errorf("the first agent after the second serve: health %s, want 200", r)
	}
	a.stop()
}

// TestSIGTERMFinishesRunningTask checks graceful shutdown: a task running
// when SIGTERM comes finishes within --grace, and the agent exits 0.
func TestSIGTERMFinishesRunningTask(t *testing.T) {
	a := startAgent(t, agentOpts{})
	_, id := a.submit(http.StatusCreated, `{"task_type":"sleep","payload":{"ms":300}}`)
	v := a.waitTask(id, 10*time.Second, "executing", func(v taskView) bool { return v.Status != "pending" && v.Status != "confirmed" })
	if v.Status != "executing" {
		t.Fatalf("got status %q before SIGTERM, want executing", v.Status)
	}
	code, took := a.term()
	if code != 0 {
		t.Fatalf("got exit code %d after SIGTERM, want 0\nstderr:\n%s", code, a.stderr())
	}
	t.Logf("exited 0 %s after SIGTERM", took.Round(time.Millisecond))

	a.start()
	// Read at once: had the task been interrupted, the restarted agent
	// would be running it again now rather than report it completed.
	v = a.task(id)
	if v.Status != "completed" || v.ResultJSON != `{"slept_ms":300}` {
		t.Errorf("after restart: got status %q result %q, want completed {\"slept_ms\":300}", v.Status, v.ResultJSON)
	}
	for _, e := range a.events(id, 5*time.Second, func(sseEvent) bool { return false }) {
		if e.typ == "log" && strings.Contains(e.data, "agent restarted") {
			t.Errorf("the task was run again after the restart: %s", e.data)
		}
	}
	a.stop()
}

// TestIdempotencyAcrossRestart checks that idempotency records are durable
// (SPEC §5.3): the stored answer is replayed byte for byte after a restart.
func TestIdempotencyAcrossRestart(t *testing.T) {
	a := startAgent(t, agentOpts{})
	const body = `{"task_type":"echo","payload":{"msg":"once"}}`
	first, id := a.submit(http.StatusCreated, body, "Idempotency-Key", "restart-key-1")
	if got := first.header.Get("Idempotent-Replayed"); got != "" {
		t.Errorf("first answer has Idempotent-Replayed: %q", got)
	}
	a.waitTask(id, 10*time.Second, "completed", func(v taskView) bool { return v.Status == "completed" })
	a.stop()
	a.start()

	t.Run("same request is replayed", func(t *testing.T) {
		again := a.call(http.MethodPost, prefix+"/task", []byte(body), "Idempotency-Key", "restart-key-1")
		if again.status != first.status || !bytes.Equal(again.body, first.body) {
			t.Errorf("got %s, want the first answer %s byte for byte", again, first)
		}
		if got := again.header.Get("Idempotent-Replayed"); got != "true" {
			t.Errorf("got Idempotent-Replayed %q, want true", got)
		}
	})
	t.Run("other request with the key is 422", func(t *testing.T) {
		r := a.call(http.MethodPost, prefix+"/task", []byte(`{"task_type":"echo","payload":{"msg":"twice"}}`), "Idempotency-Key", "restart-key-1")
		if r.status != http.StatusUnprocessableEntity {
			t.Errorf("got %s, want 422", r)
		}
	})
	t.Run("one task", func(t *testing.T) {
		hc := newClient(1, requestTimeout)
		defer hc.CloseIdleConnections()
		if ids := a.listAll(hc); len(ids) != 1 || ids[0] != id {
			t.Errorf("got tasks %v, want just %s", ids, id)
		}
	})
	a.stop()
}
