package e2e_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Time limits of the process helpers.
const (
	buildTimeout  = 5 * time.Minute
	healthTimeout = 15 * time.Second
	stopTimeout   = 10 * time.Second
	killTimeout   = 10 * time.Second
	pollEvery     = 20 * time.Millisecond
	startAttempts = 5
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

// buildBinary runs go build of the module's main package into dir/synapse.
func buildBinary(dir string, race bool) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	bin := filepath.Join(dir, "synapse")
	args := []string{"build", "-o", bin}
	env := append(os.Environ(), "CGO_ENABLED=0")
	if race {
		args = append(args, "-race")
		env = append(os.Environ(), "CGO_ENABLED=1")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, root)...)
	cmd.Dir = root
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", root, err, bytes.TrimSpace(out))
	}
	return bin, nil
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

// proc is one run of "synapse serve".
type proc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{} // closed when the process has exited
	err    error         // cmd.Wait's error; read after done
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// agentProc is an agent on one data directory, run as a sequence of
// processes (it can be killed and restarted). It is safe for concurrent use:
// load goroutines read url while the test restarts the process.
type agentProc struct {
	t       *testing.T
	dataDir string
	token   string
	args    []string
	env     []string
	bin     string

	mu   sync.Mutex
	addr string
	cur  *proc
	runs []*proc
}

// startAgent starts "synapse serve" on a free port and waits until it is
// healthy. When the test ends the agent is stopped and, if the test failed,
// the standard error of every run is logged.
func startAgent(t *testing.T, o agentOpts) *agentProc {
	t.Helper()
	if o.dataDir == "" {
		o.dataDir = t.TempDir()
	}
	if o.bin == "" {
		o.bin = synapseBin
	}
	a := &agentProc{t: t, dataDir: o.dataDir, token: randomToken(t), args: o.args, env: o.env, bin: o.bin}
	t.Cleanup(a.cleanup)
	a.start()
	return a
}

// url is the agent's base URL, http://127.0.0.1:PORT.
func (a *agentProc) url() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return "http://" + a.addr
}

// pid is the current process id.
func (a *agentProc) pid() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cur.cmd.Process.Pid
}

// stderr is the current process's standard error so far.
func (a *agentProc) stderr() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cur.stderr.String()
}

// start runs a new process on the data directory, on the previous address
// when there is one, and waits for it to be healthy. When the port turns out
// to be taken it tries another.
func (a *agentProc) start() {
	a.t.Helper()
	for attempt := 0; attempt < startAttempts; attempt++ {
		a.mu.Lock()
		if a.addr == "" || attempt > 0 {
			a.addr = freeAddr(a.t)
		}
		addr := a.addr
		a.mu.Unlock()
		p := a.launch(addr)
		err := a.waitHealthy(p)
		if err == nil {
			return
		}
		a.killProc(p)
		if errors.Is(err, errPortTaken) {
			a.t.Logf("%v; trying another port", err)
			continue
		}
		a.t.Fatalf("start agent on %s: %v\nstderr:\n%s", addr, err, p.stderr.String())
	}
	a.t.Fatalf("start agent: no free port after %d attempts", startAttempts)
}

func (a *agentProc) launch(addr string) *proc {
	a.t.Helper()
	args := append([]string{"serve", "--data", a.dataDir, "--listen", addr}, a.args...)
	cmd := exec.Command(a.bin, args...)
	cmd.Env = append(cleanEnv(), "SYNAPSE_ADMIN_TOKEN="+a.token)
	cmd.Env = append(cmd.Env, a.env...)
	p := &proc{cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stderr, p.stderr
	if err := cmd.Start(); err != nil {
		a.t.Fatalf("run %s: %v", a.bin, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	a.mu.Lock()
	a.cur = p
	a.runs = append(a.runs, p)
	a.mu.Unlock()
	return p
}

// errPortTaken is waitHealthy's error when another process has the port.
var errPortTaken = errors.New("the port is taken")

// waitHealthy polls GET /health until it answers 200, then makes sure the
// answering process is ours (it accepts our token): another process may have
// taken the port between freeAddr and our bind.
func (a *agentProc) waitHealthy(p *proc) error {
	hc := &http.Client{Timeout: time.Second}
	defer hc.CloseIdleConnections()
	base := a.url()
	deadline := time.Now().Add(healthTimeout)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		if status, err := get(hc, base+"/api/v1/synapse/health", ""); err == nil && status == http.StatusOK {
			status, err := get(hc, base+"/metrics", a.token)
			if err == nil && status == http.StatusOK && !p.exited() {
				return nil
			}
			return fmt.Errorf("%w: something else answers at %s (GET /metrics with our token: %d, %v)", errPortTaken, base, status, err)
		}
		select {
		case <-p.done:
			if strings.Contains(p.stderr.String(), "address already in use") {
				return fmt.Errorf("%w: %s", errPortTaken, base)
			}
			return fmt.Errorf("the agent exited before it was healthy: %v", p.err)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no healthy answer from %s within %s", base, healthTimeout)
		}
	}
}

func get(hc *http.Client, url, token string) (int, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// kill sends SIGKILL to the current process and waits until it is gone.
func (a *agentProc) kill() {
	a.t.Helper()
	a.mu.Lock()
	p := a.cur
	a.mu.Unlock()
	a.killProc(p)
}

func (a *agentProc) killProc(p *proc) {
	a.t.Helper()
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(killTimeout):
		a.t.Fatalf("agent pid %d still running %s after SIGKILL", p.cmd.Process.Pid, killTimeout)
	}
}

// term sends SIGTERM and returns the exit code and how long the exit took;
// a process still running after stopTimeout fails the test and is killed.
func (a *agentProc) term() (int, time.Duration) {
	a.t.Helper()
	a.mu.Lock()
	p := a.cur
	a.mu.Unlock()
	if p.exited() {
		a.t.Fatalf("agent already exited: %v\nstderr:\n%s", p.err, p.stderr.String())
	}
	start := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		a.killProc(p)
		a.t.Fatalf("agent did not exit within %s of SIGTERM\nstderr:\n%s", stopTimeout, p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode(), time.Since(start)
}

// stop sends SIGTERM and fails the test unless the agent exits 0 in time.
func (a *agentProc) stop() {
	a.t.Helper()
	if code, took := a.term(); code != 0 {
		a.t.Fatalf("agent exited %d after SIGTERM (in %s)\nstderr:\n%s", code, took, a.stderr())
	}
}

// cleanup ends a still running process and shows every run's standard
// error when the test failed or a race was reported.
func (a *agentProc) cleanup() {
	a.mu.Lock()
	p, runs := a.cur, a.runs
	a.mu.Unlock()
	if p != nil && !p.exited() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(stopTimeout):
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.done
		}
	}
	for i, r := range runs {
		out := r.stderr.String()
		if strings.Contains(out, "WARNING: DATA RACE") {
			a.t.Errorf("agent run %d reported a data race", i+1)
		}
		if a.t.Failed() {
			a.t.Logf("agent run %d (pid %d) stderr:\n%s", i+1, r.cmd.Process.Pid, out)
		}
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
