package e2e_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/synapse-edge/synapse/client/agenttest"
)

// Issue #34: TLS and mutual TLS on the HTTP API, checked with real
// clients (curl, openssl s_client, the synapse CLI, Go's http and
// WebSocket clients) against the built binary.

// needTool returns the path of a tool the test runs; a missing one skips
// the test, or fails it in CI (scripts/ci-deps.sh installs it).
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing (scripts/ci-deps.sh installs it)", name)
		}
		t.Skipf("%s is not installed (scripts/ci-deps.sh --install)", name)
	}
	return p
}

// tlsAgent is an agent serving TLS with a certificate of ca.
type tlsAgent struct {
	*agentProc
	dir, certFile, keyFile string
	ca                     *testCA
	hc                     *http.Client
}

// startTLSAgent starts an agent whose "tls" section is tlsJSON's fields
// plus cert_file and key_file, a certificate of ca for 127.0.0.1 and
// localhost.
func startTLSAgent(t *testing.T, ca *testCA, extra string, clientCerts ...tls.Certificate) *tlsAgent {
	t.Helper()
	dir := t.TempDir()
	ta := &tlsAgent{dir: dir, certFile: filepath.Join(dir, "agent.crt"), keyFile: filepath.Join(dir, "agent.key"), ca: ca}
	ca.issue(ta.certFile, ta.keyFile, leafOpts{cn: "agent", hosts: []string{"127.0.0.1", "localhost"}})
	cfg := filepath.Join(dir, "config.json")
	section := fmt.Sprintf(`"cert_file": %q, "key_file": %q`, ta.certFile, ta.keyFile)
	if extra != "" {
		section += ", " + extra
	}
	if err := os.WriteFile(cfg, []byte(`{"tls": {`+section+`}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctls := &tls.Config{RootCAs: ca.pool, Certificates: clientCerts}
	ta.agentProc = procOf(t, agenttest.Start(t, synapseBin, agenttest.Options{Args: []string{"--config", cfg, "--grace", "1s"}, ClientTLS: ctls}))
	ta.hc = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool}}}
	t.Cleanup(ta.hc.CloseIdleConnections)
	return ta
}

// get sends GET path with the admin token (when token) and returns the
// status and body.
func (ta *tlsAgent) get(path string, token bool) (int, string, http.Header) {
	ta.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, ta.url()+path, nil)
	if token {
		req.Header.Set("Authorization", "Bearer "+ta.token)
	}
	resp, err := ta.hc.Do(req)
	if err != nil {
		ta.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// run runs a command and returns its combined output and exit error.
func run(t *testing.T, stdin string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestTLSServe(t *testing.T) {
	ca := newTestCA(t, t.TempDir())
	a := startTLSAgent(t, ca, "")
	if !strings.HasPrefix(a.url(), "https://") {
		t.Fatalf("url %s", a.url())
	}
	t.Run("curl_cacert", func(t *testing.T) {
		curl := needTool(t, "curl")
		out, err := run(t, "", curl, "-sS", "--cacert", ca.file, "-H", "Authorization: Bearer "+a.token, a.url()+prefix+"/identity")
		if err != nil || !strings.Contains(out, `"agent_id"`) {
			t.Fatalf("curl --cacert: %v\n%s", err, out)
		}
		// The agent's endpoint is https by default under TLS.
		if !strings.Contains(out, `"endpoint":"https://`) {
			t.Errorf("identity %s: endpoint is not https", out)
		}
		out, err = run(t, "", curl, "-sS", a.url()+prefix+"/health")
		if err == nil {
			t.Fatalf("curl without --cacert trusted the agent: %s", out)
		}
	})
	t.Run("plain_http_400", func(t *testing.T) {
		c, err := net.DialTimeout("tcp", a.Addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "GET %s/health HTTP/1.1\r\nHost: x\r\n\r\n", prefix)
		b, _ := io.ReadAll(c)
		if got := string(b); !strings.HasPrefix(got, "HTTP/1.0 400 Bad Request\r\n") || !strings.Contains(got, "Client sent an HTTP request to an HTTPS server.") {
			t.Errorf("plain HTTP to the TLS port got %q", got)
		}
	})
	t.Run("openssl_versions_alpn", func(t *testing.T) {
		openssl := needTool(t, "openssl")
		for _, v := range []string{"-tls1_2", "-tls1_3"} {
			out, err := run(t, "", openssl, "s_client", "-connect", a.Addr, v, "-alpn", "http/1.1", "-CAfile", ca.file, "-verify_return_error", "-servername", "localhost")
			if err != nil || !strings.Contains(out, "ALPN protocol: http/1.1") || !strings.Contains(out, "Verify return code: 0 (ok)") {
				t.Errorf("openssl s_client %s: %v\n%s", v, err, out)
			}
		}
		for _, v := range []string{"-tls1", "-tls1_1"} {
			out, err := run(t, "", openssl, "s_client", "-connect", a.Addr, v, "-CAfile", ca.file)
			if err == nil && strings.Contains(out, "Cipher is") && !strings.Contains(out, "Cipher is (NONE)") {
				t.Errorf("openssl s_client %s was served:\n%s", v, out)
			}
		}
		// A TLS 1.2 CBC suite, in Go's defaults, is not served.
		out, err := run(t, "", openssl, "s_client", "-connect", a.Addr, "-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-SHA", "-CAfile", ca.file)
		if err == nil && !strings.Contains(out, "Cipher is (NONE)") {
			t.Errorf("a CBC suite was served:\n%s", out)
		}
	})
	t.Run("hsts_console", func(t *testing.T) {
		status, _, h := a.get("/", false)
		if status != http.StatusOK || h.Get("Strict-Transport-Security") != "max-age=31536000" {
			t.Errorf("console: status %d, Strict-Transport-Security %q", status, h.Get("Strict-Transport-Security"))
		}
	})
	t.Run("cli_cacert_fingerprint", func(t *testing.T) {
		base := []string{"--agent", a.url(), "--token", a.token}
		code, _, stderr := runCLI(t, 30*time.Second, append(base, "identity")...)
		if code != 1 || !strings.Contains(stderr, "pass --cacert FILE") || !strings.Contains(stderr, "--fingerprint") {
			t.Errorf("untrusted: exit %d, stderr %s", code, stderr)
		}
		code, out, stderr := runCLI(t, 30*time.Second, append(base, "--cacert", ca.file, "identity")...)
		if code != 0 || !strings.Contains(out, "agent_id:") {
			t.Errorf("--cacert: exit %d %s %s", code, out, stderr)
		}
		fp := fingerprintOf(t, a.certFile)
		code, out, stderr = runCLI(t, 30*time.Second, append(base, "--fingerprint", fp, "identity")...)
		if code != 0 || !strings.Contains(out, "agent_id:") {
			t.Errorf("--fingerprint: exit %d %s %s", code, out, stderr)
		}
		wrong := strings.Repeat("ab", 32)
		code, _, stderr = runCLI(t, 30*time.Second, append(base, "--fingerprint", wrong, "identity")...)
		if code != 1 || !strings.Contains(stderr, "pinned SHA-256 fingerprint") {
			t.Errorf("wrong --fingerprint: exit %d, stderr %s", code, stderr)
		}
	})
}

// fingerprintOf is openssl's SHA-256 fingerprint of a certificate file,
// AA:BB:... as operators copy it.
func fingerprintOf(t *testing.T, certFile string) string {
	t.Helper()
	out, err := run(t, "", needTool(t, "openssl"), "x509", "-in", certFile, "-noout", "-fingerprint", "-sha256")
	if err != nil {
		t.Fatalf("openssl x509: %v %s", err, out)
	}
	_, fp, _ := strings.Cut(strings.TrimSpace(out), "=")
	return fp
}

// TestTLSCertInit: cert init writes a 0600 key and a certificate whose
// printed fingerprint is openssl's, and an agent serving them is reached
// with curl --cacert agent.crt.
func TestTLSCertInit(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runCLI(t, 30*time.Second, "cert", "init", "--dir", dir, "--host", "127.0.0.1", "--host", "localhost")
	if code != 0 {
		t.Fatalf("cert init: exit %d %s", code, stderr)
	}
	fi, err := os.Stat(filepath.Join(dir, "agent.key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("agent.key: %v, mode %v", err, fi.Mode())
	}
	want := strings.ToLower(strings.ReplaceAll(fingerprintOf(t, filepath.Join(dir, "agent.crt")), ":", ""))
	if !strings.Contains(out, "sha256:      "+want) {
		t.Errorf("cert init printed %s; openssl says %s", out, want)
	}
	if code, _, stderr = runCLI(t, 30*time.Second, "cert", "init", "--dir", dir); code != 1 || !strings.Contains(stderr, "already there") {
		t.Errorf("second cert init: exit %d %s", code, stderr)
	}
	cfg := filepath.Join(dir, "config.json")
	os.WriteFile(cfg, []byte(`{"tls": {"cert_file": "agent.crt", "key_file": "agent.key"}}`), 0o600)
	raw, err := os.ReadFile(filepath.Join(dir, "agent.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(raw)
	a := agenttest.Start(t, synapseBin, agenttest.Options{Args: []string{"--config", cfg}, ClientTLS: &tls.Config{RootCAs: pool}})
	// The data directory itself is refused: its agent.key is the
	// agent's identity key.
	if code, _, stderr := runCLI(t, 30*time.Second, "cert", "init", "--dir", a.DataDir); code != 2 || !strings.Contains(stderr, "identity key") {
		t.Errorf("cert init into the data directory: exit %d %s", code, stderr)
	}
	out2, err := run(t, "", needTool(t, "curl"), "-sS", "--cacert", filepath.Join(dir, "agent.crt"), a.URL+prefix+"/health")
	if err != nil || !strings.Contains(out2, `"status":"SERVING"`) {
		t.Errorf("curl --cacert agent.crt: %v %s", err, out2)
	}
}

// TestTLSStartErrors: a wrong or expired certificate stops the start with
// the file and the reason.
func TestTLSStartErrors(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, dir)
	ca.issue(filepath.Join(dir, "old.crt"), filepath.Join(dir, "old.key"),
		leafOpts{cn: "old", hosts: []string{"127.0.0.1"}, notBefore: time.Now().Add(-48 * time.Hour), notAfter: time.Now().Add(-24 * time.Hour)})
	ca.issue(filepath.Join(dir, "b.crt"), filepath.Join(dir, "b.key"), leafOpts{cn: "b", hosts: []string{"127.0.0.1"}})
	cases := []struct{ name, section, want string }{
		{"expired", `"cert_file": "old.crt", "key_file": "old.key"`, "old.crt: the certificate expired at"},
		{"mismatched_key", `"cert_file": "old.crt", "key_file": "b.key"`, "private key does not match public key"},
		{"missing_file", `"cert_file": "none.crt", "key_file": "b.key"`, "none.crt: no such file"},
		{"key_alone", `"key_file": "b.key"`, "cert_file and key_file go together"},
		{"bad_client_auth", `"cert_file": "b.crt", "key_file": "b.key", "client_auth": "always"`, `tls.client_auth "always": use none, request or require`},
		{"require_without_ca", `"cert_file": "b.crt", "key_file": "b.key", "client_auth": "require"`, "needs tls.client_ca_file"},
		{"tls_1_1", `"cert_file": "b.crt", "key_file": "b.key", "min_version": "1.1"`, `tls.min_version "1.1": use 1.2 or 1.3`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := filepath.Join(dir, c.name+".json")
			os.WriteFile(cfg, []byte(`{"tls": {`+c.section+`}}`), 0o600)
			code, _, stderr := runCLI(t, 30*time.Second, "serve", "--data", t.TempDir(), "--listen", freeAddr(t), "--config", cfg)
			if code == 0 || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %s; want %q", code, stderr, c.want)
			}
		})
	}
}

// TestTLSRotation: new files are served from the next handshakes while
// an SSE stream and a WebSocket opened before stay open; a broken pair is
// refused, logged, and the last good certificate stays served.
func TestTLSRotation(t *testing.T) {
	ca := newTestCA(t, t.TempDir())
	a := startTLSAgent(t, ca, "")
	first := servedSerial(t, a)

	// A task SSE stream and the P2P message WebSocket, open across the
	// rotation.
	r := a.submitTLS(`{"task_type":"sleep","payload":{"ms":60000}}`)
	req, _ := http.NewRequest(http.MethodGet, a.url()+prefix+"/task/"+r+"/stream", nil)
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := a.hc.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("SSE: %v %v", err, resp)
	}
	defer resp.Body.Close()
	sseEnded := make(chan struct{})
	go func() {
		defer close(sseEnded)
		rd := bufio.NewReader(resp.Body)
		for {
			if _, err := rd.ReadString('\n'); err != nil {
				return
			}
		}
	}()
	d := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: ca.pool}, HandshakeTimeout: 10 * time.Second}
	ws, _, err := d.Dial("wss"+strings.TrimPrefix(a.url(), "https")+prefix+"/messages/stream", http.Header{"Authorization": {"Bearer " + a.token}})
	if err != nil {
		t.Fatalf("WebSocket: %v", err)
	}
	defer ws.Close()
	pongs := make(chan string, 4)
	ws.SetPongHandler(func(data string) error { pongs <- data; return nil })
	wsEnded := make(chan struct{})
	go func() {
		defer close(wsEnded)
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				return
			}
		}
	}()

	second := ca.issue(a.certFile, a.keyFile, leafOpts{cn: "agent-2", hosts: []string{"127.0.0.1", "localhost"}})
	waitFor(t, 30*time.Second, "the new certificate served", func() bool { return servedSerial(t, a) == second.SerialNumber.String() })
	if first == second.SerialNumber.String() {
		t.Fatal("same serial")
	}
	select {
	case <-sseEnded:
		t.Fatal("the SSE stream ended with the rotation")
	case <-wsEnded:
		t.Fatal("the WebSocket ended with the rotation")
	default:
	}
	if err := ws.WriteControl(websocket.PingMessage, []byte("after-rotation"), time.Now().Add(5*time.Second)); err != nil {
		t.Fatalf("ping after rotation: %v", err)
	}
	select {
	case p := <-pongs:
		if p != "after-rotation" {
			t.Errorf("pong %q", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no pong on the WebSocket after the rotation")
	}

	// A broken pair: a key that is no key. The old certificate stays.
	if err := os.WriteFile(a.keyFile, []byte("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the broken pair refused in the log", func() bool {
		servedSerial(t, a) // a handshake looks at the files
		return strings.Contains(a.stderr(), "new certificate refused, the old one is kept")
	})
	if got := servedSerial(t, a); got != second.SerialNumber.String() {
		t.Errorf("after a broken pair the agent serves serial %s, want the last good %s", got, second.SerialNumber)
	}
	if status, _, _ := a.get(prefix+"/health", false); status != http.StatusOK {
		t.Errorf("health after a broken pair: %d", status)
	}
}

// servedSerial is the serial of the certificate a new handshake gets.
func servedSerial(t *testing.T, a *tlsAgent) string {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", a.Addr, &tls.Config{RootCAs: a.ca.pool, ServerName: "localhost"})
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// submitTLS posts a task with the admin token and returns its id.
func (ta *tlsAgent) submitTLS(body string) string {
	ta.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, ta.url()+prefix+"/task", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+ta.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := ta.hc.Do(req)
	if err != nil {
		ta.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	_, rest, ok := strings.Cut(string(b), `"task_id":"`)
	id, _, _ := strings.Cut(rest, `"`)
	if resp.StatusCode != http.StatusCreated || !ok || id == "" {
		ta.t.Fatalf("POST /task: %d %s", resp.StatusCode, b)
	}
	return id
}

// TestTLSConnLimit: a connection over http.max_conns_per_ip (2) on the TLS
// port gets its refusal over TLS (429 too_many_connections), as on a
// plain port.
func TestTLSConnLimit(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, dir)
	certFile, keyFile := filepath.Join(dir, "agent.crt"), filepath.Join(dir, "agent.key")
	ca.issue(certFile, keyFile, leafOpts{cn: "agent", hosts: []string{"127.0.0.1"}})
	cfg := filepath.Join(dir, "config.json")
	body := fmt.Sprintf(`{"http": {"max_conns_per_ip": 2}, "tls": {"cert_file": %q, "key_file": %q}}`, certFile, keyFile)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ctls := &tls.Config{RootCAs: ca.pool}
	a := agenttest.Start(t, synapseBin, agenttest.Options{Args: []string{"--config", cfg}, ClientTLS: ctls})
	dial := func() *tls.Conn {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", a.Addr, ctls)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		return c
	}
	// Two connections held open, each shown accepted by a 200 (polled:
	// the harness's health check connections may not be released yet).
	held := func() *tls.Conn {
		var c *tls.Conn
		waitFor(t, 30*time.Second, "a connection accepted", func() bool {
			c = dial()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(c, "GET %s/health HTTP/1.1\r\nHost: x\r\n\r\n", prefix)
			line, err := bufio.NewReader(c).ReadString('\n')
			if err == nil && strings.HasPrefix(line, "HTTP/1.1 200") {
				return true
			}
			c.Close()
			return false
		})
		return c
	}
	for range 2 {
		c := held()
		defer c.Close()
	}
	second := dial()
	defer second.Close()
	_ = second.SetDeadline(time.Now().Add(10 * time.Second))
	b, _ := io.ReadAll(second)
	if got := string(b); !strings.HasPrefix(got, "HTTP/1.1 429") || !strings.Contains(got, "too_many_connections") {
		t.Errorf("the connection over the limit got %q", got)
	}
}
