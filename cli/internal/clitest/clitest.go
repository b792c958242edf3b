// Package clitest runs the synapse command line in tests: cli.Main with a
// clean environment, against an agent of the built binary
// (client/agenttest), and reads its output ("key: value" lines, JSON).
// The tests of package cli and of its command packages share it.
package clitest

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/cli"
	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/client/agenttest"
	"github.com/synapse-edge/synapse/internal/testutil"
)

// Run runs the command line with a clean environment and returns the exit
// code and the two output streams.
func Run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	for _, k := range []string{"SYNAPSE_AGENT", "SYNAPSE_TOKEN", "SYNAPSE_ADMIN_TOKEN"} {
		t.Setenv(k, "")
	}
	var out, errb bytes.Buffer
	code = cli.Main(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// WantUsage asserts what a refused command line gives: exit code 2, the
// reason want and the usage on stderr, nothing on stdout.
func WantUsage(t *testing.T, code int, stdout, stderr, want string) {
	t.Helper()
	if code != cli.ExitUsage {
		t.Errorf("exit code = %d, want 2; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	if !strings.Contains(stderr, "Usage: synapse") {
		t.Errorf("stderr has no usage:\n%s", stderr)
	}
	if stdout != "" {
		t.Errorf("stdout = %q, want empty", stdout)
	}
}

// At runs the command line against agent a (global flags first).
func At(t *testing.T, a *agenttest.Agent, stdin string, args ...string) (int, string, string) {
	t.Helper()
	return Run(t, stdin, append([]string{"--agent", a.URL, "--token", a.Token}, args...)...)
}

// Must runs the command line against a and fails the test unless it
// exits 0; it returns standard output.
func Must(t *testing.T, a *agenttest.Agent, stdin string, args ...string) string {
	t.Helper()
	code, out, errOut := At(t, a, stdin, args...)
	if code != cli.ExitOK {
		t.Fatalf("synapse %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// Eventually runs the command line against a until check accepts its
// output; each new output is logged, so a failure shows the last one.
func Eventually(t *testing.T, a *agenttest.Agent, what string, check func(out string) bool, args ...string) string {
	t.Helper()
	var last string
	testutil.Eventually(t, 20*time.Second, what+" from synapse "+strings.Join(args, " "), func() bool {
		code, out, _ := At(t, a, "", args...)
		if code == cli.ExitOK && check(out) {
			last = out
			return true
		}
		if out != last {
			t.Logf("synapse %s (exit %d):\n%s", strings.Join(args, " "), code, out)
			last = out
		}
		return false
	})
	return last
}

// ClosedAgent returns the address of a loopback port nothing listens on.
func ClosedAgent(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// Agent starts a fresh agent of the built binary for one test.
func Agent(t *testing.T, bin *agenttest.Binary) *agenttest.Agent {
	t.Helper()
	return agenttest.Start(t, bin.Path(t), agenttest.Options{})
}

// P2PAgent starts an agent whose outbox gives up after the first failed
// delivery.
func P2PAgent(t *testing.T, bin *agenttest.Binary) *agenttest.Agent {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"p2p":{"max_retries":0,"retry_base_delay_ms":20}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return agenttest.Start(t, bin.Path(t), agenttest.Options{Args: []string{"--config", cfg}})
}

// Identity fetches the public identity of a running agent.
func Identity(t *testing.T, a *agenttest.Agent) *client.Identity {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := client.New(a.URL, a.Token).Identity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// Decode unmarshals JSON output.
func Decode[T any](t *testing.T, out string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("output is not the expected JSON: %v\n%s", err, out)
	}
	return v
}

// KVValue returns the value of "key: value" in human output.
func KVValue(t *testing.T, out, key string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + `:\s+(\S.*)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("output has no %q line:\n%s", key, out)
	}
	return strings.TrimSpace(m[1])
}

// WaitTerminal polls "task get" until the task is in a terminal state.
func WaitTerminal(t *testing.T, a *agenttest.Agent, id string) client.TaskStatus {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ts := Decode[client.TaskStatus](t, Must(t, a, "", "task", "get", id, "--json"))
		if ts.Terminal() {
			return ts
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still %s after 15s", id, ts.Status)
		}
		<-tick.C
	}
}

// FirstLine is the first line of s.
func FirstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
