package e2e_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/client/agenttest"
)

// Time limits of the tests' own waits.
const (
	healthTimeout = 15 * time.Second
	pollEvery     = 20 * time.Millisecond
)

// synapseBin is the binary TestMain builds; it is set once before any test
// runs and only read afterwards.
var synapseBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if reason := crossRun(); reason != "" {
		// Every test here starts agent processes (several at once, killed
		// and restarted); the cli and client packages run the agent under
		// the emulator instead.
		fmt.Printf("e2e: all tests skipped: %s\n", reason)
		return 0
	}
	dir, err := os.MkdirTemp("", "synapse-e2e-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if bin := os.Getenv("SYNAPSE_E2E_BIN"); bin != "" {
		// a given binary, e.g. an older build to show a test fails on it
		synapseBin = bin
		return m.Run()
	}
	bin, err := buildBinary(dir, os.Getenv("SYNAPSE_E2E_RACE") == "1")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	synapseBin = bin
	return m.Run()
}

// crossRun says why the tests cannot run here: they are built for another
// architecture than the host's (go test -exec qemu-..., as make test-arm64
// and test-arm do), so the agent binary would be too. "" when native.
func crossRun() string {
	out, err := exec.Command("go", "env", "GOHOSTARCH").Output()
	if host := strings.TrimSpace(string(out)); err == nil && host != "" && host != runtime.GOARCH {
		return fmt.Sprintf("a cross run (tests for %s/%s on a %s host) does not start the agent's processes", runtime.GOOS, runtime.GOARCH, host)
	}
	return ""
}

// moduleRoot walks up from the working directory to the directory of go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("module root: %w", err)
	}
	for range 64 {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", errors.New("module root: no go.mod above the working directory")
}

// buildBinary builds the agent into dir/synapse (agenttest.Build), with
// the race detector when race.
func buildBinary(dir string, race bool) (string, error) {
	var flags []string
	if race {
		flags = append(flags, "-race")
	}
	return agenttest.Build(context.Background(), dir, flags...)
}

// cleanEnv is the test's environment without SYNAPSE_ variables, so that a
// developer's settings do not leak into the agents.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SYNAPSE_") {
			env = append(env, kv)
		}
	}
	return env
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func randomToken(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "e2e-" + hex.EncodeToString(b)
}

// syncBuffer is a bytes.Buffer safe for a writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// agentOpts configure startAgent.
type agentOpts struct {
	// dataDir is --data; default a new t.TempDir().
	dataDir string
	// args are extra serve flags, e.g. --config FILE.
	args []string
	// env are extra KEY=VALUE environment entries.
	env []string
	// bin is the binary to run; default the one TestMain built.
	bin string
}

// agentProc is an agent run by the process harness (agenttest): one data
// directory and address, a sequence of processes (killed, stopped and
// started again). The methods name what the tests do to it.
type agentProc struct {
	*agenttest.Agent
	t       *testing.T
	dataDir string
	token   string
}

// startAgent starts "synapse serve" on a free port and waits until it is
// healthy. When the test ends the agent is stopped and, if the test failed,
// the output of every run is logged.
func startAgent(t *testing.T, o agentOpts) *agentProc {
	t.Helper()
	return procOf(t, agenttest.Start(t, o.binary(), agenttest.Options{DataDir: o.dataDir, Args: o.args, Env: o.env}))
}

// newAgent is startAgent without the start: the address is known (to be
// written into another agent's config) before the agent runs.
func newAgent(t *testing.T, o agentOpts) *agentProc {
	t.Helper()
	return procOf(t, agenttest.New(t, o.binary(), agenttest.Options{DataDir: o.dataDir, Args: o.args, Env: o.env}))
}

func (o agentOpts) binary() string {
	if o.bin == "" {
		return synapseBin
	}
	return o.bin
}

func procOf(t *testing.T, a *agenttest.Agent) *agentProc {
	return &agentProc{Agent: a, t: t, dataDir: a.DataDir, token: a.Token}
}

// url is the agent's base URL, http://127.0.0.1:PORT.
func (a *agentProc) url() string { return a.URL }

// pid is the current process id.
func (a *agentProc) pid() int { return a.PID() }

// stderr is the current process's output so far.
func (a *agentProc) stderr() string { return a.Logs() }

// start runs a new process on the data directory and address and waits
// for it to be healthy.
func (a *agentProc) start() {
	a.t.Helper()
	a.Start(a.t)
}

// kill sends SIGKILL to the current process and waits until it is gone.
func (a *agentProc) kill() {
	a.t.Helper()
	a.Kill(a.t)
}

// term sends SIGTERM and returns the exit code and how long the exit took;
// a process that had exited already, or that is still running after
// agenttest.StopTimeout (it is then killed), fails the test.
func (a *agentProc) term() (int, time.Duration) {
	a.t.Helper()
	select {
	case <-a.Done():
		a.t.Fatalf("agent already exited\noutput:\n%s", a.Logs())
	default:
	}
	start := time.Now()
	code := a.Stop(a.t)
	if code == -1 {
		a.t.Fatalf("agent killed, not exited, after SIGTERM\noutput:\n%s", a.Logs())
	}
	return code, time.Since(start)
}

// stop sends SIGTERM and fails the test unless the agent exits 0 in time.
func (a *agentProc) stop() {
	a.t.Helper()
	if code, took := a.term(); code != 0 {
		a.t.Fatalf("agent exited %d after SIGTERM (in %s)\noutput:\n%s", code, took, a.stderr())
	}
}

// runCLI runs the binary with args (not serve) and returns its exit code and
// output.
func runCLI(t *testing.T, timeout time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, synapseBin, args...)
	cmd.Env = cleanEnv()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("synapse %s: no exit within %s\nstderr:\n%s", strings.Join(args, " "), timeout, errOut.String())
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errOut.String()
	case err != nil:
		t.Fatalf("synapse %s: %v", strings.Join(args, " "), err)
	}
	return 0, out.String(), errOut.String()
}
