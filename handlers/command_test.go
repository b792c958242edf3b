package handlers_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/handlers"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/internal/testutil/tasktest"
	"github.com/synapse-edge/synapse/wire"
)

// script is the command line that runs a fixture of testdata/.
func script(t *testing.T, name string) []string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return []string{"/bin/sh", p}
}

// processGone reports whether pid has exited: it no longer exists, or it is
// a zombie waiting for an init process that reaps slowly.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// The state follows the parenthesised command name.
	i := strings.LastIndexByte(string(stat), ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// readPID waits for the fixture to write its child's pid to path.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	testutil.Eventually(t, 10*time.Second, "the fixture to write its child's pid", func() bool {
		raw, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(raw)))
		return err == nil && pid > 0
	})
	return pid
}

func TestCommandHandlers(t *testing.T) {
	pidDir := t.TempDir()
	cmds := []handlers.Command{
		{TaskType: "cmd-report", Command: script(t, "report.sh"), Env: []string{"GREETING=hello"}},
		{TaskType: "cmd-fail", Command: script(t, "fail.sh")},
		{TaskType: "cmd-text", Command: script(t, "text.sh")},
		{TaskType: "cmd-bg", Command: script(t, "background.sh"), Env: []string{"PIDFILE=" + filepath.Join(pidDir, "cancel.pid")}},
		{TaskType: "cmd-timeout", Command: script(t, "background.sh"), TimeoutSeconds: 1,
			Env: []string{"PIDFILE=" + filepath.Join(pidDir, "timeout.pid")}},
		{TaskType: "cmd-missing", Command: []string{filepath.Join(pidDir, "no-such-program")}},
	}
	a := openAgent(t, handlers.Config{Commands: cmds})

	t.Run("result progress and log", func(t *testing.T) {
		task := tasktest.Submit(t, a, admin, "cmd-report", `{"x":[1,"two"]}`)
		got := tasktest.WaitFinal(t, a, task.ID)
		if got.Status != wire.StatusCompleted {
			t.Fatalf("status %s %s %q, want completed", got.Status, got.ErrorCode, got.ErrorMessage)
		}
		want := `{"got":{"x":[1,"two"]},"task_id":"` + task.ID + `","greeting":"hello"}`
		if !tasktest.JSONEqual(t, got.Result, []byte(want)) {
			t.Errorf("result = %s, want %s", got.Result, want)
		}
		var progress []float64
		var logs []string
		for _, e := range tasktest.EventsOf(t, a, task.ID) {
			m := tasktest.EventData(t, e)
			switch e.Type {
			case wire.EventProgress:
				progress = append(progress, m["progress"].(float64))
			case wire.EventLog:
				logs = append(logs, m["line"].(string))
			}
		}
		if !slices.Equal(progress, []float64{50}) {
			t.Errorf("progress events = %v, want [50]", progress)
		}
		if !slices.Equal(logs, []string{"working on cmd-report"}) {
			t.Errorf("log events = %q, want [working on cmd-report]", logs)
		}
	})
	t.Run("exit status", func(t *testing.T) {
		task := tasktest.Submit(t, a, admin, "cmd-fail", `{}`)
		got := tasktest.WaitFinal(t, a, task.ID)
		if got.Status != wire.StatusFailed || got.ErrorCode != wire.CodeExecutionFailed {
			t.Fatalf("status %s %s, want failed execution_failed", got.Status, got.ErrorCode)
		}
		if !strings.Contains(got.ErrorMessage, "the flux capacitor is cold") {
			t.Errorf("error message %q does not carry the stderr message", got.ErrorMessage)
		}
	})
	t.Run("plain text output", func(t *testing.T) {
		task := tasktest.Submit(t, a, admin, "cmd-text", `{}`)
		got := tasktest.WaitFinal(t, a, task.ID)
		if got.Status != wire.StatusCompleted || string(got.Result) != `"all good"` {
			t.Errorf("result = %s %s, want completed \"all good\"", got.Status, got.Result)
		}
	})
	t.Run("program missing", func(t *testing.T) {
		task := tasktest.Submit(t, a, admin, "cmd-missing", `{}`)
		got := tasktest.WaitFinal(t, a, task.ID)
		if got.Status != wire.StatusFailed || got.ErrorCode != wire.CodeExecutionFailed || !strings.Contains(got.ErrorMessage, "no-such-program") {
			t.Errorf("status %s %s %q, want failed execution_failed naming the program", got.Status, got.ErrorCode, got.ErrorMessage)
		}
	})
	t.Run("cancel kills the process group", func(t *testing.T) {
		task := tasktest.Submit(t, a, admin, "cmd-bg", `{}`)
		child := readPID(t, filepath.Join(pidDir, "cancel.pid"))
		if processGone(child) {
			t.Fatalf("child %d is not running before the cancel", child)
		}
		got, err := a.Cancel(context.Background(), task.ID)
		if err != nil {
			t.Fatalf("Cancel: %v", err)
		}
		if got.Status != wire.StatusCancelled {
			t.Errorf("Cancel returned %s, want cancelled", got.Status)
		}
		testutil.Eventually(t, 10*time.Second, "the background child "+strconv.Itoa(child)+" to be gone after the cancel", func() bool { return processGone(child) })
	})
	t.Run("timeout kills the process group", func(t *testing.T) {
		task := tasktest.Submit(t, a, admin, "cmd-timeout", `{}`)
		child := readPID(t, filepath.Join(pidDir, "timeout.pid"))
		got := tasktest.WaitFinal(t, a, task.ID)
		if got.Status != wire.StatusFailed || got.ErrorCode != wire.CodeExecutionTimeout {
			t.Errorf("after timeout_seconds: %s %s %q, want failed execution_timeout", got.Status, got.ErrorCode, got.ErrorMessage)
		}
		testutil.Eventually(t, 10*time.Second, "the background child "+strconv.Itoa(child)+" to be gone after the timeout", func() bool { return processGone(child) })
	})
}
