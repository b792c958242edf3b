package cli_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/cli"
	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/client/agenttest"
)

// The end-to-end tests build the real binary, run "synapse serve" and drive
// it through the command line (cli.Main in this process, and the binary
// itself in TestE2EBinary). They skip while the binary does not build.

var synapseBin agenttest.Binary

func TestMain(m *testing.M) {
	code := m.Run()
	synapseBin.Cleanup()
	os.Exit(code)
}

// e2eAgent starts a fresh agent for one test.
func e2eAgent(t *testing.T) *agenttest.Agent {
	t.Helper()
	return agenttest.Start(t, synapseBin.Path(t), agenttest.Options{})
}

// cliAt runs the command line against agent a (global flags first).
func cliAt(t *testing.T, a *agenttest.Agent, stdin string, args ...string) (int, string, string) {
	t.Helper()
	return runCLI(t, stdin, append([]string{"--agent", a.URL, "--token", a.Token}, args...)...)
}

// mustCLI runs the command line and fails the test unless it exits 0.
func mustCLI(t *testing.T, a *agenttest.Agent, stdin string, args ...string) string {
	t.Helper()
	code, out, errOut := cliAt(t, a, stdin, args...)
	if code != cli.ExitOK {
		t.Fatalf("synapse %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// decode unmarshals JSON output.
func decode[T any](t *testing.T, out string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("output is not the expected JSON: %v\n%s", err, out)
	}
	return v
}

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

// waitTerminal polls "task get" until the task is in a terminal state.
func waitTerminal(t *testing.T, a *agenttest.Agent, id string) client.TaskStatus {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ts := decode[client.TaskStatus](t, mustCLI(t, a, "", "task", "get", id, "--json"))
		if ts.Terminal() {
			return ts
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still %s after 15s", id, ts.Status)
		}
		<-tick.C
	}
}

// kvValue returns the value of "key: value" in human output.
func kvValue(t *testing.T, out, key string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + `:\s+(\S.*)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("output has no %q line:\n%s", key, out)
	}
	return strings.TrimSpace(m[1])
}

func TestE2ETasks(t *testing.T) {
	a := e2eAgent(t)

	t.Run("submit with wait returns the result", func(t *testing.T) {
		ts := decode[client.TaskStatus](t, mustCLI(t, a, "", "task", "submit", "echo", "--payload", `{"msg":"hi"}`, "--wait", "10s", "--json"))
		if ts.Status != "completed" || !jsonEqual(t, ts.ResultJSON, `{"msg":"hi"}`) {
			t.Errorf("got status %q result %q, want completed with the payload", ts.Status, ts.ResultJSON)
		}
	})

	var id string
	t.Run("submit then get", func(t *testing.T) {
		out := mustCLI(t, a, "", "task", "submit", "echo", "--payload", `{"n":1,"msg":"x"}`)
		id = kvValue(t, out, "task_id")
		if st := kvValue(t, out, "status"); st == "" {
			t.Errorf("no status in %q", out)
		}
		final := waitTerminal(t, a, id)
		if final.Status != "completed" {
			t.Fatalf("status = %q, want completed", final.Status)
		}
		out = mustCLI(t, a, "", "task", "get", id)
		if got := kvValue(t, out, "status"); got != "completed" {
			t.Errorf("status line = %q, want completed", got)
		}
		if got := kvValue(t, out, "task_type"); got != "echo" {
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
		ts := decode[client.TaskStatus](t, mustCLI(t, a, `{"from":"stdin"}`, "task", "submit", "echo", "-", "--wait", "10s", "--json"))
		if !jsonEqual(t, ts.ResultJSON, `{"from":"stdin"}`) {
			t.Errorf("result = %q, want the stdin payload", ts.ResultJSON)
		}
	})

	t.Run("idempotency key", func(t *testing.T) {
		first := mustCLI(t, a, "", "task", "submit", "echo", "--payload", `{"k":1}`, "--key", "e2e-key-1")
		second := mustCLI(t, a, "", "task", "submit", "echo", "--payload", `{"k":1}`, "--key", "e2e-key-1")
		if kvValue(t, first, "task_id") != kvValue(t, second, "task_id") {
			t.Errorf("same key gave two tasks:\n%s\n%s", first, second)
		}
		if got := kvValue(t, second, "replayed"); got != "true" {
			t.Errorf("second answer replayed = %q, want true", got)
		}
	})

	t.Run("list", func(t *testing.T) {
		tl := decode[client.TaskList](t, mustCLI(t, a, "", "task", "list", "--type", "echo", "--json"))
		if !containsTask(tl.Tasks, id) {
			t.Errorf("task %s not in list %+v", id, tl.Tasks)
		}
		for _, ts := range tl.Tasks {
			if ts.TaskType != "echo" {
				t.Errorf("--type echo listed a %q task", ts.TaskType)
			}
		}
		all := decode[client.TaskList](t, mustCLI(t, a, "", "task", "list", "--limit", "1", "--all", "--json"))
		if len(all.Tasks) < 4 || !containsTask(all.Tasks, id) {
			t.Errorf("--all --limit 1 gave %d tasks, want at least 4 including %s", len(all.Tasks), id)
		}
		code, out, errOut := cliAt(t, a, "", "task", "list", "--limit", "1")
		if code != cli.ExitOK || !strings.HasPrefix(out, "TASK ID") || strings.Count(out, "\n") != 2 {
			t.Errorf("one-page list: exit %d\n%s", code, out)
		}
		if !strings.Contains(errOut, "--page-token") {
			t.Errorf("no next-page hint on stderr: %q", errOut)
		}
		byStatus := decode[client.TaskList](t, mustCLI(t, a, "", "task", "list", "--status", "completed", "--json"))
		for _, ts := range byStatus.Tasks {
			if ts.Status != "completed" {
				t.Errorf("--status completed listed a %q task", ts.Status)
			}
		}
	})

	t.Run("info for a task that needs it", func(t *testing.T) {
		out := mustCLI(t, a, "", "task", "submit", "sleep") // sleep requires "ms"
		id := kvValue(t, out, "task_id")
		if got := kvValue(t, out, "status"); got != "info_needed" {
			t.Fatalf("status = %q, want info_needed", got)
		}
		if got := mustCLI(t, a, "", "task", "get", id); !strings.Contains(got, "missing_fields:\n  ms") {
			t.Errorf("task get does not show the missing field:\n%s", got)
		}
		mustCLI(t, a, "", "task", "info", id, "ms=10")
		final := waitTerminal(t, a, id)
		if final.Status != "completed" || !jsonEqual(t, final.ResultJSON, `{"slept_ms":10}`) {
			t.Errorf("after info: status %q result %q, want completed with slept_ms 10", final.Status, final.ResultJSON)
		}
	})

	t.Run("unknown task", func(t *testing.T) {
		code, _, errOut := cliAt(t, a, "", "task", "get", "no-such-task")
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
	a := e2eAgent(t)
	out := mustCLI(t, a, "", "task", "submit", "sleep", "--payload", `{"ms":300}`)
	id := kvValue(t, out, "task_id")

	t.Run("bar", func(t *testing.T) {
		code, out, errOut := cliAt(t, a, "", "task", "watch", id)
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
		out := mustCLI(t, a, "", "task", "watch", id, "--json")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		type line struct {
			Event string          `json:"event"`
			ID    string          `json:"id"`
			Data  json.RawMessage `json:"data"`
		}
		last := decode[line](t, lines[len(lines)-1])
		if last.Event != "complete" {
			t.Errorf("last event = %q, want complete; events:\n%s", last.Event, out)
		}
		first := decode[line](t, lines[0])
		if first.ID == "" || first.ID == last.ID {
			t.Errorf("event ids %q..%q, want distinct ids", first.ID, last.ID)
		}
		// Resuming after the first event leaves it out.
		resumed := strings.Split(strings.TrimSpace(mustCLI(t, a, "", "task", "watch", id, "--json", "--from", first.ID)), "\n")
		if len(resumed) != len(lines)-1 {
			t.Errorf("--from %s gave %d events, want %d", first.ID, len(resumed), len(lines)-1)
		}
	})
	t.Run("plain", func(t *testing.T) {
		out := mustCLI(t, a, "", "task", "watch", id, "--plain")
		if strings.Contains(out, "\r") || !strings.Contains(out, "] 100% completed\n") {
			t.Errorf("plain output %q", out)
		}
	})
}

func TestE2ECancel(t *testing.T) {
	a := e2eAgent(t)
	id := kvValue(t, mustCLI(t, a, "", "task", "submit", "sleep", "--payload", `{"ms":60000}`), "task_id")
	out := mustCLI(t, a, "", "task", "cancel", id)
	if want := "task " + id + ": cancelled\n"; out != want {
		t.Errorf("cancel output %q, want %q", out, want)
	}
	if ts := waitTerminal(t, a, id); ts.Status != "cancelled" {
		t.Errorf("status %q, want cancelled", ts.Status)
	}
	mustCLI(t, a, "", "task", "cancel", id) // idempotent

	code, _, errOut := cliAt(t, a, "", "task", "watch", id)
	if code != cli.ExitFailure || !strings.Contains(errOut, "task "+id+" ended cancelled") {
		t.Errorf("watch of a cancelled task: exit %d, stderr %q; want 1 and the end state", code, errOut)
	}

	done := decode[client.TaskStatus](t, mustCLI(t, a, "", "task", "submit", "echo", "--wait", "10s", "--json"))
	code, _, errOut = cliAt(t, a, "", "task", "cancel", done.TaskID)
	if code != cli.ExitFailure || !strings.Contains(errOut, "task_already_completed (409)") {
		t.Errorf("cancel of a completed task: exit %d, stderr %q; want 1 and task_already_completed (409)", code, errOut)
	}
}

func TestE2ETokens(t *testing.T) {
	a := e2eAgent(t)
	tc := decode[client.TokenCreated](t, mustCLI(t, a, "", "token", "create", "reader", "--scope", "tasks:read", "--json"))
	if tc.Token == "" || tc.TokenID == "" || len(tc.Scopes) != 1 || tc.Scopes[0] != "tasks:read" {
		t.Fatalf("created token %+v", tc)
	}
	asReader := func(args ...string) (int, string, string) {
		return runCLI(t, "", append([]string{"--agent", a.URL, "--token", tc.Token}, args...)...)
	}
	if code, _, errOut := asReader("task", "list"); code != cli.ExitOK {
		t.Errorf("reader cannot list tasks: exit %d, %s", code, errOut)
	}
	if code, _, errOut := asReader("task", "submit", "echo"); code != cli.ExitFailure || !strings.Contains(errOut, "(403)") {
		t.Errorf("reader submit: exit %d, stderr %q; want 1 and 403", code, errOut)
	}
	if code, _, errOut := asReader("token", "list"); code != cli.ExitFailure || !strings.Contains(errOut, "(403)") {
		t.Errorf("reader token list: exit %d, stderr %q; want 1 and 403", code, errOut)
	}

	out := mustCLI(t, a, "", "token", "list")
	if !strings.HasPrefix(out, "TOKEN ID") || !strings.Contains(out, tc.TokenID) || !strings.Contains(out, "reader") {
		t.Errorf("token list lacks the new token:\n%s", out)
	}
	if strings.Contains(out, tc.Token) {
		t.Error("token list shows the secret")
	}
	human := mustCLI(t, a, "", "token", "create", "writer")
	if got := kvValue(t, human, "scopes"); got != "tasks:read,tasks:write" {
		t.Errorf("default scopes = %q, want tasks:read,tasks:write", got)
	}

	if out := mustCLI(t, a, "", "token", "revoke", tc.TokenID); out != "revoked token "+tc.TokenID+"\n" {
		t.Errorf("revoke output %q", out)
	}
	if code, _, errOut := asReader("task", "list"); code != cli.ExitFailure || !strings.Contains(errOut, "(401)") {
		t.Errorf("revoked token: exit %d, stderr %q; want 1 and 401", code, errOut)
	}
}

func TestE2EDB(t *testing.T) {
	a := e2eAgent(t)
	for range 3 {
		mustCLI(t, a, "", "task", "submit", "echo", "--wait", "10s")
	}
	type checkOut struct {
		Source, Where string
		OK            bool
		Errors        []string
		Tasks         int
		SchemaVersion int `json:"schema_version"`
	}
	type backupOut struct {
		Path, Source string
		Bytes        int64
	}

	t.Run("check over HTTP", func(t *testing.T) {
		res := decode[checkOut](t, mustCLI(t, a, "", "db", "check", "--json"))
		if res.Source != "agent" || !res.OK || res.Tasks < 3 || res.SchemaVersion < 1 {
			t.Errorf("check = %+v, want ok from the agent with at least 3 tasks", res)
		}
	})
	t.Run("offline check of a served file is refused", func(t *testing.T) {
		code, _, errOut := cliAt(t, a, "", "db", "check", "--offline", "--data", a.DataDir)
		if code != cli.ExitFailure || !strings.Contains(errOut, "in use") || !strings.Contains(errOut, "leave out --offline") ||
			strings.Contains(errOut, "does not answer") {
			t.Errorf("exit %d, stderr %q; want 1, 'in use' and the advice to leave out --offline", code, errOut)
		}
	})
	backupDir := t.TempDir()
	httpCopy := filepath.Join(backupDir, "http.db")
	t.Run("backup over HTTP", func(t *testing.T) {
		res := decode[backupOut](t, mustCLI(t, a, "", "db", "backup", "--out", httpCopy, "--json"))
		st, err := os.Stat(httpCopy)
		if err != nil {
			t.Fatal(err)
		}
		if res.Source != "agent" || res.Bytes == 0 || st.Size() != res.Bytes {
			t.Errorf("backup = %+v, file has %d bytes", res, st.Size())
		}
		if entries, _ := os.ReadDir(backupDir); len(entries) != 1 {
			t.Errorf("backup dir has %d entries, want only the copy (no temp files)", len(entries))
		}
	})

	if code := a.Stop(t); code != 0 {
		t.Fatalf("agent exit code after SIGTERM = %d, want 0\n%s", code, a.Logs())
	}

	t.Run("another agent at --agent", func(t *testing.T) {
		// The stopped agent's directory, with another agent answering at
		// --agent: its file is checked, not the other agent.
		other := e2eAgent(t)
		res := decode[checkOut](t, mustCLI(t, other, "", "db", "check", "--data", a.DataDir, "--json"))
		if res.Source != "file" || !res.OK || res.Tasks < 3 {
			t.Errorf("check = %+v, want ok from the file of --data with at least 3 tasks", res)
		}
	})
	t.Run("check the file after stop", func(t *testing.T) {
		// No --offline: the agent no longer answers, so the file is used.
		res := decode[checkOut](t, mustCLI(t, a, "", "db", "check", "--data", a.DataDir, "--json"))
		if res.Source != "file" || !res.OK || res.Tasks < 3 {
			t.Errorf("check = %+v, want ok from the file with at least 3 tasks", res)
		}
	})
	t.Run("offline backup and check of the copies", func(t *testing.T) {
		copyDir := filepath.Join(backupDir, "restored")
		if err := os.Mkdir(copyDir, 0o700); err != nil {
			t.Fatal(err)
		}
		out := mustCLI(t, a, "", "db", "backup", "--offline", "--data", a.DataDir, "--out", filepath.Join(copyDir, "synapse.db"))
		if !strings.HasPrefix(out, "wrote ") || !strings.Contains(out, "(from file ") {
			t.Errorf("backup output %q", out)
		}
		for _, dir := range []string{copyDir, httpDir(t, httpCopy)} {
			res := decode[checkOut](t, mustCLI(t, a, "", "db", "check", "--offline", "--data", dir, "--json"))
			if !res.OK || res.Tasks < 3 {
				t.Errorf("check of the copy in %s = %+v", dir, res)
			}
		}
	})
	t.Run("no database", func(t *testing.T) {
		code, _, errOut := cliAt(t, a, "", "db", "check", "--offline", "--data", t.TempDir())
		if code != cli.ExitFailure || !strings.Contains(errOut, "no database at") {
			t.Errorf("exit %d, stderr %q; want 1 and 'no database at'", code, errOut)
		}
	})
}

// httpDir moves the HTTP backup into a directory of its own as synapse.db,
// so that db check --data can read it.
func httpDir(t *testing.T, path string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "from-http")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, filepath.Join(dir, "synapse.db")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestE2EBinary runs the built binary itself: main's wiring, the exit
// codes and the environment variables.
func TestE2EBinary(t *testing.T) {
	bin := synapseBin.Path(t)
	a := agenttest.Start(t, bin, agenttest.Options{})
	run := func(env []string, args ...string) (int, string, string) {
		t.Helper()
		cmd := agenttest.Command(bin, args...)
		cmd.Env = append(os.Environ(), "SYNAPSE_AGENT=", "SYNAPSE_TOKEN=", "SYNAPSE_ADMIN_TOKEN=")
		cmd.Env = append(cmd.Env, env...)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String(), errOut.String()
	}
	code, out, _ := run(nil, "version")
	if want := regexp.MustCompile(`^synapse \S+ ` + runtime.GOOS + `/` + runtime.GOARCH + ` go\S+\n$`); code != 0 || !want.MatchString(out) {
		t.Errorf("version: exit %d, %q", code, out)
	}
	if code, _, errOut := run(nil, "frobnicate"); code != 2 || !strings.Contains(errOut, "Usage:") {
		t.Errorf("unknown command: exit %d, stderr %q; want 2 and usage", code, errOut)
	}
	env := []string{"SYNAPSE_AGENT=" + a.URL, "SYNAPSE_ADMIN_TOKEN=" + a.Token}
	if code, out, errOut := run(env, "task", "submit", "echo", "--payload", `{"via":"env"}`, "--wait", "10s"); code != 0 || !strings.Contains(out, `"via": "env"`) {
		t.Errorf("submit via env: exit %d\n%s\n%s", code, out, errOut)
	}
	// The token file in the data directory is the last resort.
	tokenDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(tokenDir, "admin.token"), []byte(a.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run([]string{"SYNAPSE_AGENT=" + a.URL}, "token", "list", "--data", tokenDir); code != 0 {
		t.Errorf("token from admin.token: exit %d, %s", code, errOut)
	}
	if code, _, errOut := run([]string{"SYNAPSE_AGENT=" + a.URL}, "token", "list", "--data", t.TempDir()); code != 1 || !strings.Contains(errOut, "no token found") {
		t.Errorf("no token: exit %d, stderr %q; want 1 and a hint", code, errOut)
	}
}
