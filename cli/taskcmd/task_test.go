package taskcmd_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/cli"
	"github.com/synapse-edge/synapse/cli/internal/clitest"
	"github.com/synapse-edge/synapse/client"
)

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(t *testing.T, got, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		return false
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON %q: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return string(gb) == string(wb)
}

func TestE2ETasks(t *testing.T) {
	a := clitest.Agent(t, &synapseBin)

	t.Run("submit with wait returns the result", func(t *testing.T) {
		ts := clitest.Decode[client.TaskStatus](t, clitest.Must(t, a, "", "task", "submit", "echo", "--payload", `{"msg":"hi"}`, "--wait", "10s", "--json"))
		if ts.Status != "completed" || !jsonEqual(t, ts.ResultJSON, `{"msg":"hi"}`) {
			t.Errorf("got status %q result %q, want completed with the payload", ts.Status, ts.ResultJSON)
		}
	})

	var id string
	t.Run("submit then get", func(t *testing.T) {
		out := clitest.Must(t, a, "", "task", "submit", "echo", "--payload", `{"n":1,"msg":"x"}`)
		id = clitest.KVValue(t, out, "task_id")
		if st := clitest.KVValue(t, out, "status"); st == "" {
			t.Errorf("no status in %q", out)
		}
		final := clitest.WaitTerminal(t, a, id)
		if final.Status != "completed" {
			t.Fatalf("status = %q, want completed", final.Status)
		}
		out = clitest.Must(t, a, "", "task", "get", id)
		if got := clitest.KVValue(t, out, "status"); got != "completed" {
			t.Errorf("status line = %q, want completed", got)
		}
		if got := clitest.KVValue(t, out, "task_type"); got != "echo" {
			t.Errorf("task_type line = %q, want echo", got)
		}
		if !strings.Contains(out, "result:\n  {\n    \"msg\": \"x\",\n    \"n\": 1\n  }") &&
			!strings.Contains(out, "result:\n  {\n    \"n\": 1,\n    \"msg\": \"x\"\n  }") {
			t.Errorf("result is not pretty-printed:\n%s", out)
		}
		if !strings.Contains(out, "history:") {
			t.Errorf("no history in:\n%s", out)
		}
	})

	t.Run("submit from stdin", func(t *testing.T) {
		ts := clitest.Decode[client.TaskStatus](t, clitest.Must(t, a, `{"from":"stdin"}`, "task", "submit", "echo", "-", "--wait", "10s", "--json"))
		if !jsonEqual(t, ts.ResultJSON, `{"from":"stdin"}`) {
			t.Errorf("result = %q, want the stdin payload", ts.ResultJSON)
		}
	})

	t.Run("idempotency key", func(t *testing.T) {
		first := clitest.Must(t, a, "", "task", "submit", "echo", "--payload", `{"k":1}`, "--key", "e2e-key-1")
		second := clitest.Must(t, a, "", "task", "submit", "echo", "--payload", `{"k":1}`, "--key", "e2e-key-1")
		if clitest.KVValue(t, first, "task_id") != clitest.KVValue(t, second, "task_id") {
			t.Errorf("same key gave two tasks:\n%s\n%s", first, second)
		}
		if got := clitest.KVValue(t, second, "replayed"); got != "true" {
			t.Errorf("second answer replayed = %q, want true", got)
		}
	})

	t.Run("list", func(t *testing.T) {
		tl := clitest.Decode[client.TaskList](t, clitest.Must(t, a, "", "task", "list", "--type", "echo", "--json"))
		if !containsTask(tl.Tasks, id) {
			t.Errorf("task %s not in list %+v", id, tl.Tasks)
		}
		for _, ts := range tl.Tasks {
			if ts.TaskType != "echo" {
				t.Errorf("--type echo listed a %q task", ts.TaskType)
			}
		}
		all := clitest.Decode[client.TaskList](t, clitest.Must(t, a, "", "task", "list", "--limit", "1", "--all", "--json"))
		if len(all.Tasks) < 4 || !containsTask(all.Tasks, id) {
			t.Errorf("--all --limit 1 gave %d tasks, want at least 4 including %s", len(all.Tasks), id)
		}
		code, out, errOut := clitest.At(t, a, "", "task", "list", "--limit", "1")
		if code != cli.ExitOK || !strings.HasPrefix(out, "TASK ID") || strings.Count(out, "\n") != 2 {
			t.Errorf("one-page list: exit %d\n%s", code, out)
		}
		if !strings.Contains(errOut, "--page-token") {
			t.Errorf("no next-page hint on stderr: %q", errOut)
		}
		byStatus := clitest.Decode[client.TaskList](t, clitest.Must(t, a, "", "task", "list", "--status", "completed", "--json"))
		for _, ts := range byStatus.Tasks {
			if ts.Status != "completed" {
				t.Errorf("--status completed listed a %q task", ts.Status)
			}
		}
	})

	t.Run("info for a task that needs it", func(t *testing.T) {
		out := clitest.Must(t, a, "", "task", "submit", "sleep") // sleep requires "ms"
		id := clitest.KVValue(t, out, "task_id")
		if got := clitest.KVValue(t, out, "status"); got != "info_needed" {
			t.Fatalf("status = %q, want info_needed", got)
		}
		if got := clitest.Must(t, a, "", "task", "get", id); !strings.Contains(got, "missing_fields:\n  ms") {
			t.Errorf("task get does not show the missing field:\n%s", got)
		}
		clitest.Must(t, a, "", "task", "info", id, "ms=10")
		final := clitest.WaitTerminal(t, a, id)
		if final.Status != "completed" || !jsonEqual(t, final.ResultJSON, `{"slept_ms":10}`) {
			t.Errorf("after info: status %q result %q, want completed with slept_ms 10", final.Status, final.ResultJSON)
		}
	})

	t.Run("unknown task", func(t *testing.T) {
		code, _, errOut := clitest.At(t, a, "", "task", "get", "no-such-task")
		if code != cli.ExitFailure || !strings.Contains(errOut, "task_not_found (404)") {
			t.Errorf("exit %d, stderr %q; want 1 and task_not_found (404)", code, errOut)
		}
	})
}

func containsTask(tasks []client.TaskStatus, id string) bool {
	for _, ts := range tasks {
		if ts.TaskID == id {
			return true
		}
	}
	return false
}

func TestE2EWatch(t *testing.T) {
	a := clitest.Agent(t, &synapseBin)
	out := clitest.Must(t, a, "", "task", "submit", "sleep", "--payload", `{"ms":300}`)
	id := clitest.KVValue(t, out, "task_id")

	t.Run("bar", func(t *testing.T) {
		code, out, errOut := clitest.At(t, a, "", "task", "watch", id)
		if code != cli.ExitOK {
			t.Fatalf("exit %d, stderr:\n%s", code, errOut)
		}
		// Standard output is not a terminal here: one line per change, no
		// carriage returns.
		if strings.Contains(out, "\r") || !strings.Contains(out, "\n[####################] 100% completed\n") {
			t.Errorf("no plain progress lines ending completed in %q", out)
		}
		if !strings.Contains(out, "result:") || !strings.Contains(out, `"slept_ms": 300`) {
			t.Errorf("no result in %q", out)
		}
	})
	t.Run("json replays the finished stream", func(t *testing.T) {
		out := clitest.Must(t, a, "", "task", "watch", id, "--json")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		type line struct {
			Event string          `json:"event"`
			ID    string          `json:"id"`
			Data  json.RawMessage `json:"data"`
		}
		last := clitest.Decode[line](t, lines[len(lines)-1])
		if last.Event != "complete" {
			t.Errorf("last event = %q, want complete; events:\n%s", last.Event, out)
		}
		first := clitest.Decode[line](t, lines[0])
		if first.ID == "" || first.ID == last.ID {
			t.Errorf("event ids %q..%q, want distinct ids", first.ID, last.ID)
		}
		// Resuming after the first event leaves it out.
		resumed := strings.Split(strings.TrimSpace(clitest.Must(t, a, "", "task", "watch", id, "--json", "--from", first.ID)), "\n")
		if len(resumed) != len(lines)-1 {
			t.Errorf("--from %s gave %d events, want %d", first.ID, len(resumed), len(lines)-1)
		}
	})
	t.Run("plain", func(t *testing.T) {
		out := clitest.Must(t, a, "", "task", "watch", id, "--plain")
		if strings.Contains(out, "\r") || !strings.Contains(out, "] 100% completed\n") {
			t.Errorf("plain output %q", out)
		}
	})
}

func TestE2ECancel(t *testing.T) {
	a := clitest.Agent(t, &synapseBin)
	id := clitest.KVValue(t, clitest.Must(t, a, "", "task", "submit", "sleep", "--payload", `{"ms":60000}`), "task_id")
	out := clitest.Must(t, a, "", "task", "cancel", id)
	if want := "task " + id + ": cancelled\n"; out != want {
		t.Errorf("cancel output %q, want %q", out, want)
	}
	if ts := clitest.WaitTerminal(t, a, id); ts.Status != "cancelled" {
		t.Errorf("status %q, want cancelled", ts.Status)
	}
	clitest.Must(t, a, "", "task", "cancel", id) // idempotent

	code, _, errOut := clitest.At(t, a, "", "task", "watch", id)
	if code != cli.ExitFailure || !strings.Contains(errOut, "task "+id+" ended cancelled") {
		t.Errorf("watch of a cancelled task: exit %d, stderr %q; want 1 and the end state", code, errOut)
	}

	done := clitest.Decode[client.TaskStatus](t, clitest.Must(t, a, "", "task", "submit", "echo", "--wait", "10s", "--json"))
	code, _, errOut = clitest.At(t, a, "", "task", "cancel", done.TaskID)
	if code != cli.ExitFailure || !strings.Contains(errOut, "task_already_completed (409)") {
		t.Errorf("cancel of a completed task: exit %d, stderr %q; want 1 and task_already_completed (409)", code, errOut)
	}
}
