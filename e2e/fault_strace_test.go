//go:build linux

package e2e_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The disk fault tests (issue #28) inject errors into the system calls of
// a running agent process with strace -e inject, attached with -p for as
// long as the fault lasts: what the agent sees is what a failing disk
// gives it, whatever its commit path (bbolt's fdatasync after the meta
// page, or one fdatasync per group of a commit log), since both fsync and
// fdatasync are failed. Detaching ends the fault.

// syncCalls are the system calls a commit's durability rests on.
const syncCalls = "fdatasync,fsync"

// straceAttachTimeout bounds how long strace may take to attach to every
// thread of the agent.
const straceAttachTimeout = 15 * time.Second

// straceBin is the strace binary; a test skips without it, or fails when
// CI=true (scripts/ci-deps.sh installs it).
func straceBin(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("strace")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("strace is not installed (scripts/ci-deps.sh installs it)")
		}
		t.Skip("strace is not installed: the disk fault tests inject errors with it (scripts/ci-deps.sh --install)")
	}
	return p
}

// diskFault is strace attached to an agent process, failing some of its
// system calls until clear is called.
type diskFault struct {
	t    *testing.T
	cmd  *exec.Cmd
	logs *syncBuffer
	done chan struct{}
}

// injectFault attaches strace to every thread of process pid (and those it
// starts) and fails the calls named by inject, an strace -e inject value
// such as "fdatasync,fsync:error=EIO:when=2+3". It returns once strace has
// attached. When ptrace is not permitted here (kernel.yama.ptrace_scope)
// the test skips, or fails when CI=true.
func injectFault(t *testing.T, pid int, inject string) *diskFault {
	t.Helper()
	bin := straceBin(t)
	syscalls, _, _ := strings.Cut(inject, ":")
	cmd := exec.Command(bin, "-f", "-o", os.DevNull, "-e", "trace="+syscalls, "-e", "inject="+inject, "-p", strconv.Itoa(pid))
	f := &diskFault{t: t, cmd: cmd, logs: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = f.logs, f.logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start strace: %v", err)
	}
	go func() {
		_ = cmd.Wait()
		close(f.done)
	}()
	t.Cleanup(func() { f.clear() })
	deadline := time.Now().Add(straceAttachTimeout)
	for !strings.Contains(f.logs.String(), "attached") {
		select {
		case <-f.done:
			out := f.logs.String()
			if strings.Contains(out, "Operation not permitted") && os.Getenv("CI") != "true" {
				t.Skipf("strace cannot attach to the agent (ptrace not permitted here, see kernel.yama.ptrace_scope): %s", out)
			}
			t.Fatalf("strace -p %d exited before it attached: %s", pid, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("strace -p %d not attached after %s: %s", pid, straceAttachTimeout, f.logs.String())
		}
		time.Sleep(pollEvery)
	}
	return f
}

// clear detaches strace (SIGTERM: it detaches from every thread before
// it exits), which ends the fault, and returns when it has exited.
func (f *diskFault) clear() {
	select {
	case <-f.done:
		return
	default:
	}
	if err := f.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		f.t.Errorf("stop strace: %v", err)
	}
	select {
	case <-f.done:
	case <-time.After(straceAttachTimeout):
		_ = f.cmd.Process.Kill()
		<-f.done
		f.t.Errorf("strace did not exit after SIGTERM: %s", f.logs.String())
	}
}

// healthServingWithin fails the test unless the agent's /health reads
// SERVING within limit of now (the moment a fault cleared). The store
// probes itself while it fails, so no client write is needed.
func healthServingWithin(t *testing.T, a *agentProc, limit time.Duration) {
	t.Helper()
	cleared := time.Now()
	hc := newClient(1, limit)
	defer hc.CloseIdleConnections()
	for {
		r, err := a.send(t.Context(), hc, http.MethodGet, prefix+"/health", nil)
		if err == nil && r.status == http.StatusOK && strings.Contains(string(r.body), `"SERVING"`) {
			t.Logf("/health SERVING %s after the fault cleared", time.Since(cleared).Round(time.Millisecond))
			return
		}
		if time.Since(cleared) > limit {
			t.Fatalf("/health is %s (%v) %s after the fault cleared, want SERVING within %s", r, err, time.Since(cleared).Round(time.Millisecond), limit)
		}
		time.Sleep(pollEvery)
	}
}

// dbCheckClean runs synapse db check, live (on the running agent) or
// --offline on its file, and fails the test unless it is clean.
func dbCheckClean(t *testing.T, a *agentProc, live bool) {
	t.Helper()
	args := []string{"db", "check", "--offline", "--data", a.dataDir, "--json"}
	if live {
		args = []string{"db", "check", "--agent", a.url(), "--token", a.token, "--json"}
	}
	code, out, errOut := runCLI(t, time.Minute, args...)
	var rep struct {
		OK bool `json:"ok"`
	}
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || !rep.OK {
		t.Errorf("synapse %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
}
