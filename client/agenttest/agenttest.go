// Package agenttest runs real synapse agent processes for end-to-end tests:
// it builds the binary from the module's main package, starts
// "synapse serve" on a free loopback port with a temporary data directory
// and a known admin token, waits until the health route answers, and stops
// the process with SIGTERM when the test ends.
//
//	bin := agenttest.BuildOnce(t)   // skips the test when the build fails
//	a := agenttest.Start(t, bin, agenttest.Options{})
//	c := client.New(a.URL, a.Token)
package agenttest

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

// Time limits.
const (
	// StartTimeout bounds how long Start waits for the health route.
	StartTimeout = 20 * time.Second
	// StopTimeout bounds how long Stop waits after SIGTERM before killing.
	StopTimeout = 15 * time.Second
	// buildTimeout bounds the go build.
	buildTimeout = 5 * time.Minute
)

// Build compiles the module's main package (the directory of go.mod) into
// dir/synapse and returns the binary's path. The error carries the
// compiler's output.
func Build(ctx context.Context, dir string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	gomod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	if strings.TrimSpace(string(gomod)) == "" || root == "." {
		return "", errors.New("build synapse: not inside a Go module")
	}
	bin := filepath.Join(dir, "synapse")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
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
	if emu := os.Getenv(EmulatorEnv); emu != "" {
		return exec.Command(emu, append([]string{bin}, args...)...)
	}
	return exec.Command(bin, args...)
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

// Options configure Start.
type Options struct {
	// DataDir is the --data directory; default a new t.TempDir().
	DataDir string
	// Token is the admin token (SYNAPSE_ADMIN_TOKEN); default random.
	Token string
	// Args are extra arguments to serve (e.g. --config FILE).
	Args []string
	// Env are extra environment variables (KEY=VALUE).
	Env []string
}

// Agent is a running synapse serve process.
type Agent struct {
	// URL is the agent's base URL, http://127.0.0.1:PORT.
	URL string
	// Addr is the listen address, 127.0.0.1:PORT.
	Addr string
	// Token is the admin token.
	Token string
	// DataDir is the data directory.
	DataDir string

	cmd      *exec.Cmd
	logs     *syncBuffer
	done     chan struct{}
	waitErr  error
	stopOnce sync.Once
	exitCode int
}

// Start runs "synapse serve --data DIR --listen 127.0.0.1:PORT" and waits
// until GET /api/v1/synapse/health answers 200. The agent is stopped when
// the test ends. It retries on another port when the port was taken
// meanwhile, and fails the test with the agent's output otherwise.
func Start(t testing.TB, bin string, opts Options) *Agent {
	t.Helper()
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	if opts.Token == "" {
		opts.Token = RandomToken(t)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		a, err := start(bin, opts)
		if err != nil {
			t.Fatalf("start agent: %v", err)
		}
		if err = a.waitHealthy(StartTimeout); err == nil {
			t.Cleanup(func() { a.Stop(t) })
			return a
		}
		a.Stop(t)
		lastErr = fmt.Errorf("%w\nagent output:\n%s", err, a.Logs())
		if !strings.Contains(a.Logs(), "address already in use") {
			break
		}
	}
	t.Fatalf("start agent: %v", lastErr)
	return nil
}

// start launches the process on a free port.
func start(bin string, opts Options) (*Agent, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	a := &Agent{
		URL: "http://" + addr, Addr: addr, Token: opts.Token, DataDir: opts.DataDir,
		logs: &syncBuffer{}, done: make(chan struct{}), exitCode: -1,
	}
	args := append([]string{"serve", "--data", opts.DataDir, "--listen", addr}, opts.Args...)
	a.cmd = Command(bin, args...)
	a.cmd.Env = append(cleanEnv(), "SYNAPSE_ADMIN_TOKEN="+opts.Token)
	a.cmd.Env = append(a.cmd.Env, opts.Env...)
	a.cmd.Stdout, a.cmd.Stderr = a.logs, a.logs
	if err := a.cmd.Start(); err != nil {
		return nil, fmt.Errorf("run %s: %w", bin, err)
	}
	go func() {
		a.waitErr = a.cmd.Wait()
		close(a.done)
	}()
	return a, nil
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

// waitHealthy polls the health route until it answers 200, the process
// exits, or the timeout passes.
func (a *Agent) waitHealthy(timeout time.Duration) error {
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := hc.Get(a.URL + "/api/v1/synapse/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no healthy answer from %s within %s", a.URL, timeout)
		}
		select {
		case <-a.done:
			return fmt.Errorf("agent exited before it was healthy: %v", a.waitErr)
		case <-tick.C:
		}
	}
}

// Stop sends SIGTERM, waits up to StopTimeout (then kills the process) and
// returns the exit code; -1 when it had to be killed. It is safe to call
// more than once.
func (a *Agent) Stop(t testing.TB) int {
	t.Helper()
	a.stopOnce.Do(func() {
		_ = a.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-a.done:
		case <-time.After(StopTimeout):
			t.Errorf("agent did not exit within %s of SIGTERM; killing it", StopTimeout)
			_ = a.cmd.Process.Kill()
			<-a.done
			return
		}
		a.exitCode = a.cmd.ProcessState.ExitCode()
	})
	return a.exitCode
}

// Done is closed when the process has exited.
func (a *Agent) Done() <-chan struct{} { return a.done }

// Logs returns what the process wrote to stdout and stderr so far.
func (a *Agent) Logs() string { return a.logs.String() }

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
