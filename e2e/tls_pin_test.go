package e2e_test

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/client/agenttest"
	"github.com/synapse-edge/synapse/internal/tlscert"
)

// Issue #34, "What it must show" 3: two agents paired over https with
// only the fingerprints synapse cert init printed (no CA anywhere),
// delegating tasks; B's certificate swapped is refused by A, whose outbox
// keeps the task, and pairing again with the new fingerprint heals it.

// pinnedAgent is an agent serving TLS with a self-signed pair of
// synapse cert init, reached by the test under its fingerprint.
type pinnedAgent struct {
	*agentProc
	certDir string
	fp      string
	hc      *http.Client
}

// certInit runs synapse cert init into dir for 127.0.0.1 and returns the
// fingerprint it printed.
func certInit(t *testing.T, dir string) string {
	t.Helper()
	code, out, stderr := runCLI(t, 30*time.Second, "cert", "init", "--dir", dir, "--host", "127.0.0.1")
	if code != 0 {
		t.Fatalf("cert init: exit %d %s", code, stderr)
	}
	_, rest, ok := strings.Cut(out, "sha256:")
	fp, _, _ := strings.Cut(strings.TrimSpace(rest), "\n")
	if !ok || len(fp) != 64 {
		t.Fatalf("cert init printed no fingerprint: %s", out)
	}
	return fp
}

// startPinnedAgent starts an agent with a fresh cert init pair, sending
// heartbeats every heartbeat seconds; extra is more of the config file's
// top-level fields.
func startPinnedAgent(t *testing.T, heartbeat int, extra string) *pinnedAgent {
	t.Helper()
	dir := t.TempDir()
	pa := &pinnedAgent{certDir: filepath.Join(dir, "tls")}
	pa.fp = certInit(t, pa.certDir)
	cfg := filepath.Join(dir, "config.json")
	body := `{"tls": {"cert_file": "tls/agent.crt", "key_file": "tls/agent.key"}, ` +
		fmt.Sprintf(`"p2p": {"heartbeat_interval_seconds": %d, "retry_base_delay_ms": 100}`, heartbeat) + extra + `}`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	pa.agentProc = procOf(t, agenttest.Start(t, synapseBin, agenttest.Options{
		Args: []string{"--config", cfg, "--grace", "1s"}, ClientTLS: tlscert.PinnedConfig(pa.fp)}))
	pa.hc = &http.Client{Timeout: 40 * time.Second, Transport: &http.Transport{TLSClientConfig: tlscert.PinnedConfig(pa.fp)}}
	t.Cleanup(pa.hc.CloseIdleConnections)
	return pa
}

// call sends method path (below the API prefix) with the admin token.
func (pa *pinnedAgent) call(method, path, body string) (int, string) {
	pa.t.Helper()
	req, _ := http.NewRequest(method, pa.url()+prefix+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+pa.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := pa.hc.Do(req)
	if err != nil {
		pa.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// cli runs a synapse command against the agent, verifying it under its
// fingerprint (--agent-fingerprint, after the verb: the verb's
// --fingerprint is the peer's).
func (pa *pinnedAgent) cli(args ...string) (int, string, string) {
	pa.t.Helper()
	return runCLI(pa.t, 60*time.Second, append(args, "--agent", pa.url(), "--token", pa.token,
		"--agent-fingerprint", pa.fp)...)
}

// identity returns the agent's id.
func (pa *pinnedAgent) identity() string {
	pa.t.Helper()
	_, body := pa.call(http.MethodGet, "/identity", "")
	var id struct {
		AgentID string `json:"agent_id"`
	}
	if err := json.Unmarshal([]byte(body), &id); err != nil || id.AgentID == "" {
		pa.t.Fatalf("identity %s: %v", body, err)
	}
	return id.AgentID
}

// served is the fingerprint of the certificate a new handshake gets.
func (pa *pinnedAgent) served() string {
	pa.t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", pa.Addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		pa.t.Fatalf("handshake: %v", err)
	}
	defer c.Close()
	return tlscert.Fingerprint(c.ConnectionState().PeerCertificates[0])
}

// taskStatus is the status of task id on the agent.
func (pa *pinnedAgent) taskStatus(id string) string {
	pa.t.Helper()
	_, body := pa.call(http.MethodGet, "/task/"+id, "")
	var v struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal([]byte(body), &v)
	return v.Status
}

func TestTLSPeersPinned(t *testing.T) {
	// B closes idle connections after a second and A beats every three,
	// so that each heartbeat of A after the swap opens a connection, and
	// a handshake.
	a := startPinnedAgent(t, 3, "")
	b := startPinnedAgent(t, 1, `, "http": {"idle_timeout_seconds": 1}`)
	aID, bID := a.identity(), b.identity()

	// A pairs B by its fingerprint; B accepts A's request by A's.
	code, out, stderr := a.cli("peer", "add", b.url(), "--fingerprint", b.fp)
	if code != 0 || !strings.Contains(out, b.fp) {
		t.Fatalf("peer add %s --fingerprint: exit %d\n%s%s", b.url(), code, out, stderr)
	}
	if code, out, stderr = b.cli("peer", "accept", aID, "--fingerprint", a.fp); code != 0 || !strings.Contains(out, a.fp) {
		t.Fatalf("peer accept %s --fingerprint: exit %d\n%s%s", aID, code, out, stderr)
	}
	_, body := a.call(http.MethodGet, "/agents/"+bID, "")
	if !strings.Contains(body, `"tls_fingerprint":"`+b.fp+`"`) {
		t.Fatalf("A's record of B keeps no pin: %s", body)
	}
	// Pairing again without --fingerprint keeps the pin.
	if code, out, stderr = a.cli("peer", "add", b.url()); code != 0 || !strings.Contains(out, b.fp) {
		t.Fatalf("peer add again without --fingerprint: exit %d\n%s%s; want the pin kept", code, out, stderr)
	}
	// A wrong fingerprint does not pair at all, and says why.
	wrong := strings.Repeat("0", 64)
	c := startPinnedAgent(t, 30, "")
	if code, _, stderr = c.cli("peer", "add", b.url(), "--fingerprint", wrong); code == 0 || !strings.Contains(stderr, "pinned") {
		t.Errorf("peer add under a wrong fingerprint: exit %d %s; want a refusal naming the pin", code, stderr)
	}

	for _, bad := range []struct{ body, why string }{
		{`{"endpoint":"` + b.url() + `","tls_fingerprint":"not hex"}`, "64 hex digits"},
		{`{"endpoint":"` + strings.Replace(b.url(), "https:", "http:", 1) + `","tls_fingerprint":"` + b.fp + `"}`, "https endpoint"},
	} {
		if status, body := c.call(http.MethodPost, "/agents", bad.body); status != http.StatusBadRequest || !strings.Contains(body, bad.why) {
			t.Errorf("POST /agents %s: %d %s; want 400 naming %q", bad.body, status, body, bad.why)
		}
	}

	echo := func(hello string) string {
		return `{"task_type":"echo","payload":{"hello":"` + hello + `"},"target":"` + bID + `"}`
	}
	status, res := a.call(http.MethodPost, "/task?wait=30", echo("one"))
	if status != http.StatusOK || !strings.Contains(res, `"status":"completed"`) {
		t.Fatalf("delegated echo under pinned certificates: %d %s", status, res)
	}
	id := a.submitPinned(echo("two"))
	waitFor(t, 60*time.Second, "the second delegated task completed", func() bool { return a.taskStatus(id) == "completed" })

	// B's certificate is swapped: a new cert init, moved over the files
	// B serves, picked up without a restart.
	newDir := filepath.Join(t.TempDir(), "new")
	newFP := certInit(t, newDir)
	if newFP == b.fp {
		t.Fatal("cert init wrote the same certificate twice")
	}
	for _, f := range []string{"agent.key", "agent.crt"} {
		if err := os.Rename(filepath.Join(newDir, f), filepath.Join(b.certDir, f)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 30*time.Second, "B serves its new certificate", func() bool { return b.served() == newFP })
	b.hc.CloseIdleConnections()
	b.fp, b.hc = newFP, &http.Client{Timeout: 40 * time.Second, Transport: &http.Transport{TLSClientConfig: tlscert.PinnedConfig(newFP)}}
	t.Cleanup(b.hc.CloseIdleConnections)

	waitFor(t, 60*time.Second, "A logs the refusal of B's new certificate", func() bool {
		return strings.Contains(a.stderr(), "tls_certificate_changed") && strings.Contains(a.stderr(), newFP)
	})
	for _, line := range strings.Split(a.stderr(), "\n") {
		if strings.Contains(line, "tls_certificate_changed") {
			t.Logf("A: %s", line)
			break
		}
	}
	refused := a.submitPinned(echo("three"))
	waitFor(t, 60*time.Second, "the refused task waiting in A's outbox", func() bool {
		_, body := a.call(http.MethodGet, "/outbox?peer="+bID, "")
		_, dead := a.call(http.MethodGet, "/outbox?state=dead&peer="+bID, "")
		return strings.Contains(body+dead, "pinned")
	})
	if st := a.taskStatus(refused); st == "completed" {
		t.Fatalf("task %s completed on B's swapped certificate", refused)
	}
	if status, body := b.call(http.MethodGet, "/task/"+refused, ""); status != http.StatusNotFound {
		t.Fatalf("B got task %s under a certificate A did not pin: %d %s", refused, status, body)
	}

	if n := strings.Count(a.stderr(), "level=WARN msg=\"a peer's TLS certificate is not the one pinned"); n != 1 {
		t.Errorf("A logged the refusal of one new certificate %d times at WARN, want once", n)
	}

	// Pairing again with the new fingerprint re-pins B; what waited goes.
	if code, out, stderr = a.cli("peer", "add", b.url(), "--fingerprint", newFP); code != 0 || !strings.Contains(out, newFP) {
		t.Fatalf("re-pin: exit %d\n%s%s", code, out, stderr)
	}
	waitFor(t, 90*time.Second, "the task that waited completed after the re-pin", func() bool { return a.taskStatus(refused) == "completed" })
	if st := b.taskStatus(refused); st != "completed" {
		t.Errorf("B's copy of task %s: status %q after the re-pin", refused, st)
	}
}

// submitPinned posts a task with the admin token and returns its id.
func (pa *pinnedAgent) submitPinned(body string) string {
	pa.t.Helper()
	status, res := pa.call(http.MethodPost, "/task", body)
	_, rest, ok := strings.Cut(res, `"task_id":"`)
	id, _, _ := strings.Cut(rest, `"`)
	if status != http.StatusCreated || !ok || id == "" {
		pa.t.Fatalf("POST /task: %d %s", status, res)
	}
	return id
}
