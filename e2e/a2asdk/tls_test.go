package a2asdk_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/synapse-edge/synapse/client/agenttest"
)

// startSynapseTLS starts Synapse serving TLS with a pair synapse cert init
// made for 127.0.0.1; it returns the target and the certificate file the
// clients trust.
func startSynapseTLS(t *testing.T) (*target, string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(synapseBin, "cert", "init", "--dir", dir, "--host", "127.0.0.1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cert init: %v\n%s", err, out)
	}
	certFile := filepath.Join(dir, "agent.crt")
	cfg := filepath.Join(dir, "synapse.json")
	if err := os.WriteFile(cfg, []byte(`{"tls": {"cert_file": "agent.crt", "key_file": "agent.key"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(raw)
	a := agenttest.Start(t, synapseBin, agenttest.Options{Args: []string{"--config", cfg},
		Env: []string{"SYNAPSE_OUTBOUND_ALLOW=127.0.0.0/8"}, ClientTLS: &tls.Config{RootCAs: pool}})
	if !strings.HasPrefix(a.URL, "https://") {
		t.Fatalf("agent URL %s", a.URL)
	}
	return &target{name: "synapse-tls", base: a.URL, token: a.Token, v03URL: a.URL + "/a2a"}, certFile
}

// TestGoSDKOverTLS (issue 34) runs the Go SDK suite (a2a-go's client from
// the card, v1.0) against Synapse over https, the client trusting its
// self-signed certificate; the card names https URLs only.
func TestGoSDKOverTLS(t *testing.T) {
	tg, certFile := startSynapseTLS(t)
	raw, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(raw)
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	ctx := t.Context()
	card, err := agentcard.NewResolver(hc).Resolve(ctx, tg.base)
	if err != nil {
		t.Fatalf("resolve the card over https: %v", err)
	}
	cj, _ := json.Marshal(card)
	if strings.Contains(string(cj), `"http://`) || !strings.Contains(string(cj), `"https://`) {
		t.Errorf("the card over TLS names non-https URLs: %s", cj)
	}
	creds := a2aclient.NewInMemoryCredentialsStore()
	creds.Set("test", "bearer", a2aclient.AuthCredential(tg.token))
	c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(hc), a2aclient.WithRESTTransport(hc),
		a2aclient.WithCallInterceptors(&a2aclient.AuthInterceptor{Service: creds}))
	if err != nil {
		t.Fatalf("NewFromCard: %v", err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	suite(t, tg, c, a2aclient.AttachSessionID(ctx, "test"), false)
}

// TestJSSDKOverTLS (issue 34) runs the whole of js/client.test.mjs,
// @a2a-js/sdk's client with node's fetch, against Synapse over https,
// trusting its self-signed certificate through NODE_EXTRA_CA_CERTS: the
// card's URLs are https and every method works as over plain HTTP.
func TestJSSDKOverTLS(t *testing.T) {
	node := needNode(t)
	tg, certFile := startSynapseTLS(t)
	b, err := json.Marshal([]map[string]any{{"name": tg.name, "base": tg.base, "token": tg.token, "known": map[string]string{}}})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), node, "--test", "--test-reporter=spec", "client.test.mjs")
	cmd.Dir = filepath.Join(".", "js")
	cmd.Env = append(os.Environ(), "A2A_TARGETS="+string(b), "NODE_EXTRA_CA_CERTS="+certFile)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test client.test.mjs (https):\n%s", out)
	if err != nil {
		t.Fatalf("the JS SDK client tests over https failed: %v", err)
	}
	if !strings.Contains(string(out), "synapse-tls") {
		t.Fatal("the JS tests did not run against the https target")
	}
}

// needNode returns node, when node and js/node_modules are there (make
// test-a2a runs npm ci); else the test is skipped, or fails in CI.
func needNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join("js", "node_modules", "@a2a-js", "sdk"))
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the JS SDK test needs node and js/node_modules (npm ci): %v", err)
		}
		t.Skipf("the JS SDK test needs node and js/node_modules (npm ci in js/): %v", err)
	}
	return node
}
