package e2e_test

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTLSMutual: client_auth require refuses a client without a
// certificate at the handshake; a certificate mapped in tls.clients gets
// exactly its scopes; an unmapped one of the CA gets none; bearer tokens
// keep working beside them.
func TestTLSMutual(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, dir)
	reader := filepath.Join(dir, "reader")
	ca.issue(reader+".crt", reader+".key", leafOpts{cn: "plc-7", client: true})
	bySAN := filepath.Join(dir, "san")
	ca.issue(bySAN+".crt", bySAN+".key", leafOpts{cn: "other", hosts: []string{"scada.plant.example"}, client: true})
	stranger := filepath.Join(dir, "stranger")
	ca.issue(stranger+".crt", stranger+".key", leafOpts{cn: "nobody", client: true})
	extra := `"client_ca_file": ` + quote(ca.file) + `, "client_auth": "require", "clients": [
		{"subject": "plc-7", "name": "plc-7", "scopes": ["tasks:read"]},
		{"san": "scada.plant.example", "name": "scada", "scopes": ["tasks:write"]}]`
	a := startTLSAgent(t, ca, extra, clientCert(t, reader+".crt", reader+".key"))

	t.Run("no_certificate_refused_at_handshake", func(t *testing.T) {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", a.Addr, &tls.Config{RootCAs: ca.pool, ServerName: "localhost"})
		if err == nil {
			// TLS 1.3: the server's refusal arrives with the first read.
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			_, err = c.Write([]byte("GET " + prefix + "/health HTTP/1.1\r\nHost: x\r\n\r\n"))
			if err == nil {
				_, err = c.Read(make([]byte, 1))
			}
			c.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "certificate required") {
			t.Errorf("a client without a certificate: %v, want a handshake alert (certificate required)", err)
		}
		curl := needTool(t, "curl")
		out, cerr := run(t, "", curl, "-sS", "--cacert", ca.file, a.url()+prefix+"/health")
		if cerr == nil {
			t.Errorf("curl without a client certificate was served: %s", out)
		}
	})
	do := func(t *testing.T, pair, method, path, body, token string) (int, string) {
		t.Helper()
		cfg := &tls.Config{RootCAs: ca.pool}
		if pair != "" {
			cfg.Certificates = []tls.Certificate{clientCert(t, pair+".crt", pair+".key")}
		}
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		defer hc.CloseIdleConnections()
		req, _ := http.NewRequest(method, a.url()+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	task := `{"task_type":"echo","payload":{"x":1}}`
	cases := []struct {
		name, pair, method, path, body, token string
		want                                  int
	}{
		{"subject_reads", reader, "GET", prefix + "/tasks", "", "", 200},
		{"subject_cannot_write", reader, "POST", prefix + "/task", task, "", 403},
		{"subject_not_admin", reader, "GET", prefix + "/tokens", "", "", 403},
		{"san_writes", bySAN, "POST", prefix + "/task", task, "", 201},
		{"san_write_implies_read", bySAN, "GET", prefix + "/tasks", "", "", 200},
		{"unmapped_needs_token", stranger, "GET", prefix + "/tasks", "", "", 401},
		{"unmapped_with_admin_token", stranger, "GET", prefix + "/tokens", "", a.token, 200},
		{"mapped_with_admin_token", reader, "GET", prefix + "/tokens", "", a.token, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, body := do(t, c.pair, c.method, c.path, c.body, c.token); got != c.want {
				t.Errorf("%s %s: %d %s, want %d", c.method, c.path, got, body, c.want)
			}
		})
	}
	t.Run("curl_client_cert", func(t *testing.T) {
		out, err := run(t, "", needTool(t, "curl"), "-sS", "-o", os.DevNull, "-w", "%{http_code}", "--cacert", ca.file,
			"--cert", reader+".crt", "--key", reader+".key", a.url()+prefix+"/tasks")
		if err != nil || out != "200" {
			t.Errorf("curl --cert: %v %s", err, out)
		}
	})
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }
