// Package agenttest runs real synapse agent processes for tests: it builds
// the binary from the module's main package, starts "synapse serve" on a
// free loopback port with a temporary data directory and a known admin
// token, waits until the agent answers (and is the process it started),
// and stops it with SIGTERM when the test ends. An agent can be killed
// (SIGKILL) and started again on the same data directory and address, as
// often as a test needs; when the test fails, the output of every run is
// logged, and a data race reported by an agent built with -race fails it.
// It is the one process harness of the end-to-end tests (e2e), the command
// line's and the client's.
//
//	var bin agenttest.Binary          // builds once per test process
//	a := agenttest.Start(t, bin.Path(t), agenttest.Options{})
//	c := client.New(a.URL, a.Token)
//	a.Kill(t)                         // kill -9
//	a.Start(t)                        // same data directory, same address
package agenttest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// Time limits.
const (
	// StartTimeout bounds how long Start waits for the health route.
	StartTimeout = 20 * time.Second
	// StopTimeout bounds how long Stop waits after SIGTERM before killing.
	StopTimeout = 15 * time.Second
	// KillTimeout bounds how long Kill waits for the process to be gone.
	KillTimeout = 10 * time.Second
	// pollEvery is the interval of the health checks.
	pollEvery = 20 * time.Millisecond
	// startAttempts bounds the tries on another port when the first one
	// turned out to be taken.
	startAttempts = 5
	// buildTimeout bounds the go build.
	buildTimeout = 5 * time.Minute
)

// Module is the import path of the module whose main package is the agent.
const Module = "github.com/synapse-edge/synapse"

// Build compiles the agent (the main package of Module, found from the
// working directory's module: the module itself or one that requires it,
// such as e2e/a2asdk) into dir/synapse and returns the binary's path.
// flags are extra go build flags; with -race cgo is enabled. The error
// carries the compiler's output.
func Build(ctx context.Context, dir string, flags ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", Module).Output()
	root := strings.TrimSpace(string(out))
	if err != nil || root == "" {
		return "", fmt.Errorf("build synapse: no module %s here (go list -m: %v)", Module, err)
	}
	bin := filepath.Join(dir, "synapse")
	cmd := exec.CommandContext(ctx, "go", append(append([]string{"build", "-o", bin}, flags...), ".")...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if slices.Contains(flags, "-race") {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build synapse: %w\n%s", err, bytes.TrimSpace(out))
	}
	return bin, nil
}

// Binary builds the synapse binary once per test process and removes it
// when Cleanup is called. The zero value is ready to use.
type Binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Path returns the binary, building it on first use; when the build
// fails the test is skipped with the compiler's output (the end-to-end
// tests then wait for a main package that builds).
func (b *Binary) Path(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "synapse-e2e-")
		if b.err == nil {
			b.path, b.err = Build(context.Background(), b.dir)
		}
	})
	if b.err != nil {
		t.Skipf("end-to-end test skipped: the synapse binary does not build yet: %v", b.err)
	}
	if reason := CrossSkipReason(); reason != "" {
		t.Skip(reason)
	}
	return b.path
}

// EmulatorEnv names the environment variable with the command that runs
// binaries built for another architecture (make test-arm64 and test-arm
// set it to qemu-aarch64-static or qemu-arm-static).
const EmulatorEnv = "SYNAPSE_TEST_EMULATOR"

// Command is exec.Command(bin, args...), run under the emulator of
// EmulatorEnv when it is set.
func Command(bin string, args ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if emu := os.Getenv(EmulatorEnv); emu != "" {
		cmd = exec.Command(emu, append([]string{bin}, args...)...)
	} else {
		cmd = exec.Command(bin, args...)
	}
	DieWithParent(cmd)
	return cmd
}

// CrossSkipReason says why a test that starts the agent binary cannot run
// here: the tests are built for another architecture than the host's (go
// test -exec qemu-...) and no emulator is named in EmulatorEnv. It is ""
// when the binary can run.
func CrossSkipReason() string {
	if os.Getenv(EmulatorEnv) != "" {
		return ""
	}
	out, err := exec.Command("go", "env", "GOHOSTARCH").Output()
	if host := strings.TrimSpace(string(out)); err == nil && host != "" && host != runtime.GOARCH {
		return fmt.Sprintf("skipped on a cross run: the agent binary is built for %s/%s and this host is %s; "+
			"set %s to an emulator (make test-arm64 and test-arm do) to run it", runtime.GOOS, runtime.GOARCH, host, EmulatorEnv)
	}
	return ""
}

// Cleanup removes the built binary; call it from TestMain after m.Run.
func (b *Binary) Cleanup() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

// Options configure Start and New.
type Options struct {
	// DataDir is the --data directory; default a new t.TempDir().
	DataDir string
	// Token is the admin token (SYNAPSE_ADMIN_TOKEN); default random.
	Token string
	// Args are extra arguments to serve (e.g. --config FILE).
	Args []string
	// Env are extra environment variables (KEY=VALUE).
	Env []string
	// ClientTLS, if set, means the agent serves TLS (its config has a
	// "tls" section): URL is https:// and the health check trusts what
	// this client config trusts.
	ClientTLS *tls.Config
}

// Agent is an agent on one data directory and one address, run as a
// sequence of processes of "synapse serve" (Start, Stop or Kill, Start
// again). Its methods are safe for concurrent use; the exported fields do
// not change after New.
type Agent struct {
	// URL is the agent's base URL, http://127.0.0.1:PORT (https:// with
	// Options.ClientTLS).
	URL string
	// Addr is the listen address, 127.0.0.1:PORT.
	Addr string
	// Token is the admin token.
	Token string
	// DataDir is the data directory.
	DataDir string

	t         testing.TB
	bin       string
	scheme    string
	clientTLS *tls.Config

	mu   sync.Mutex
	args []string // serve flags of the next run
	env  []string // extra environment of the next run
	cur  *proc    // the current (or last) run
	runs []*proc
}

// proc is one run of "synapse serve".
type proc struct {
	cmd      *exec.Cmd
	logs     *syncBuffer
	done     chan struct{} // closed when the process has exited
	err      error         // cmd.Wait's error; read after done
	stopOnce sync.Once
	code     int // exit code after Stop; -1 when it had to be killed
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Start runs "synapse serve --data DIR --listen 127.0.0.1:PORT" and waits
// until the agent answers GET /health and, with its token, GET /metrics
// (so the answer comes from this process, not another one that took the
// port). The agent is stopped when the test ends. When the port turns out
// to be taken it tries another; it fails the test with the agent's output
// otherwise.
func Start(t testing.TB, bin string, opts Options) *Agent {
	t.Helper()
	a := New(t, bin, opts)
	a.start(t, true)
	return a
}

// New prepares an agent without starting it: its address is chosen (a
// port that was free just now) so that it can be written into another
// agent's configuration before both start. Start(t) runs it.
func New(t testing.TB, bin string, opts Options) *Agent {
	t.Helper()
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	if opts.Token == "" {
		opts.Token = RandomToken(t)
	}
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	scheme := "http://"
	if opts.ClientTLS != nil {
		scheme = "https://"
	}
	a := &Agent{URL: scheme + addr, Addr: addr, Token: opts.Token, DataDir: opts.DataDir,
		t: t, bin: bin, args: opts.Args, env: opts.Env, scheme: scheme, clientTLS: opts.ClientTLS}
	t.Cleanup(a.cleanup)
	return a
}

// SetArgs replaces the extra serve arguments of the next Start (a new
// --config, for example).
func (a *Agent) SetArgs(args ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.args = args
}

// Start runs a new process on the agent's data directory and address
// (peers pin it) and waits until it answers; the previous one must have
// exited (Stop, Kill). A taken address fails the test.
func (a *Agent) Start(t testing.TB) {
	t.Helper()
	a.start(t, false)
}

// start launches and waits for health; first (the package's Start: no one
// knows the address yet) allows moving to another port when the address
// turns out to be taken.
func (a *Agent) start(t testing.TB, first bool) {
	t.Helper()
	a.mu.Lock()
	if a.cur != nil && !a.cur.exited() {
		a.mu.Unlock()
		t.Fatalf("start agent %s: the previous process (pid %d) still runs", a.URL, a.cur.cmd.Process.Pid)
	}
	a.mu.Unlock()
	for attempt := 0; attempt < startAttempts; attempt++ {
		if attempt > 0 {
			addr, err := freeAddr()
			if err != nil {
				t.Fatal(err)
			}
			a.Addr, a.URL = addr, a.scheme+addr // only before the first run answered
		}
		p := a.launch(t)
		err := a.waitHealthy(p)
		if err == nil {
			return
		}
		a.killProc(t, p)
		if errors.Is(err, errPortTaken) && first {
			t.Logf("%v; trying another port", err)
			continue
		}
		t.Fatalf("start agent on %s: %v\nagent output:\n%s", a.Addr, err, p.logs.String())
	}
	t.Fatalf("start agent: no free port after %d attempts", startAttempts)
}

func (a *Agent) launch(t testing.TB) *proc {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	args := append([]string{"serve", "--data", a.DataDir, "--listen", a.Addr}, a.args...)
	cmd := Command(a.bin, args...)
	cmd.Env = append(cleanEnv(), "SYNAPSE_ADMIN_TOKEN="+a.Token)
	cmd.Env = append(cmd.Env, a.env...)
	p := &proc{cmd: cmd, logs: &syncBuffer{}, done: make(chan struct{}), code: -1}
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("run %s: %v", a.bin, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	a.cur = p
	a.runs = append(a.runs, p)
	return p
}

// cleanEnv is the environment without the SYNAPSE_ variables of the caller.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SYNAPSE_") {
			env = append(env, kv)
		}
	}
	return env
}

// freeAddr returns a loopback address with a port that was free just now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// errPortTaken is waitHealthy's error when another process has the port.
var errPortTaken = errors.New("the port is taken")

// waitHealthy polls GET /health until it answers 200, then makes sure the
// answering process is ours (GET /metrics accepts our token): another
// process may have taken the port between freeAddr and our bind.
func (a *Agent) waitHealthy(p *proc) error {
	hc := &http.Client{Timeout: time.Second}
	if a.clientTLS != nil {
		hc.Transport = &http.Transport{TLSClientConfig: a.clientTLS}
	}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(StartTimeout)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		if status, err := get(hc, a.URL+wire.APIPrefix+"/health", ""); err == nil && status == http.StatusOK {
			status, err := get(hc, a.URL+"/metrics", a.Token)
			if err == nil && status == http.StatusOK && !p.exited() {
				return nil
			}
			return fmt.Errorf("%w: something else answers at %s (GET /metrics with our token: %d, %v)", errPortTaken, a.URL, status, err)
		}
		select {
		case <-p.done:
			if strings.Contains(p.logs.String(), "address already in use") {
				return fmt.Errorf("%w: %s", errPortTaken, a.URL)
			}
			return fmt.Errorf("the agent exited before it was healthy: %v", p.err)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no healthy answer from %s within %s", a.URL, StartTimeout)
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

// current is the current (or last) run; nil before the first.
func (a *Agent) current() *proc {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cur
}

// Stop sends SIGTERM to the current process, waits up to StopTimeout (then
// kills it, failing the test) and returns the exit code; -1 when it had
// to be killed. It is safe to call more than once.
func (a *Agent) Stop(t testing.TB) int {
	t.Helper()
	p := a.current()
	if p == nil {
		return -1
	}
	p.stopOnce.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
			p.code = p.cmd.ProcessState.ExitCode()
		case <-time.After(StopTimeout):
			t.Errorf("agent did not exit within %s of SIGTERM; killing it\nagent output:\n%s", StopTimeout, p.logs.String())
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p.code
}

// Kill sends SIGKILL to the current process and waits until it is gone.
func (a *Agent) Kill(t testing.TB) {
	t.Helper()
	if p := a.current(); p != nil {
		a.killProc(t, p)
	}
}

func (a *Agent) killProc(t testing.TB, p *proc) {
	t.Helper()
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(KillTimeout):
		t.Fatalf("agent pid %d still running %s after SIGKILL", p.cmd.Process.Pid, KillTimeout)
	}
}

// PID is the process id of the current run (0 before the first).
func (a *Agent) PID() int {
	if p := a.current(); p != nil {
		return p.cmd.Process.Pid
	}
	return 0
}

// Done is closed when the current process has exited (nil before the
// first run).
func (a *Agent) Done() <-chan struct{} {
	if p := a.current(); p != nil {
		return p.done
	}
	return nil
}

// Logs returns what the current process wrote to stdout and stderr so far.
func (a *Agent) Logs() string {
	if p := a.current(); p != nil {
		return p.logs.String()
	}
	return ""
}

// cleanup ends a still running process and, for every run, fails the test
// on a data race it reported and logs its output when the test failed.
func (a *Agent) cleanup() {
	a.mu.Lock()
	p, runs := a.cur, a.runs
	a.mu.Unlock()
	if p != nil && !p.exited() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(StopTimeout):
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.done
		}
	}
	for i, r := range runs {
		out := r.logs.String()
		if strings.Contains(out, "WARNING: DATA RACE") {
			a.t.Errorf("agent run %d (pid %d) reported a data race", i+1, r.cmd.Process.Pid)
		}
		if a.t.Failed() {
			a.t.Logf("agent run %d (pid %d) output:\n%s", i+1, r.cmd.Process.Pid, out)
		}
	}
}

// RandomToken returns a fresh random token for tests.
func RandomToken(t testing.TB) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "test-" + hex.EncodeToString(b)
}

// syncBuffer is a bytes.Buffer safe for one writer and many readers.
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
