package e2e_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostileConfig writes a config file with body (a JSON object's members)
// and returns its path.
func hostileConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte("{"+body+"}"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// rawExchange writes req on a fresh connection and reads one answer, all
// within timeout; status 0 and the error when there was none.
func rawExchange(addr, req string, body []byte, timeout time.Duration) (int, string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return 0, "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write(append([]byte(req), body...)); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b := make([]byte, 4096)
	n, _ := resp.Body.Read(b)
	return resp.StatusCode, string(b[:n]), nil
}

// TestHostileBodiesBeforeAuth (issue #15, item 1): 256 connections without
// a token declare the largest body each route allows — multipart uploads
// (max_file_size + 1 MiB), tier-1 batches, tasks — and send one byte of
// it; a quarter of them send whole 1 MiB bodies to the routes that need no
// token (P2P envelopes). The agent's resident memory must stay under 64
// MiB all along, every token-less request gets 401, and the agent answers
// afterwards. A client that asks "Expect: 100-continue" without a token is
// refused before it sends a byte of body.
func TestHostileBodiesBeforeAuth(t *testing.T) {
	const (
		conns    = 256
		maxRSS   = 64 << 20
		holdFor  = 3 * time.Second
		deadline = 20 * time.Second
	)
	if os.Getenv("SYNAPSE_E2E_RACE") == "1" {
		t.Skip("resident memory of a -race binary is not the product's")
	}
	a := startAgent(t, agentOpts{args: []string{"--config", hostileConfig(t, `"http":{"max_conns_per_ip":1024}`)}})
	for range 10 {
		a.submit(http.StatusCreated, `{"task_type":"echo","payload":{"warm":true}}`)
	}
	pid := a.pid()
	addr := strings.TrimPrefix(a.url(), "http://")
	before := rssBytes(t, pid)

	type attack struct {
		path, ctype string
		declared    int
		full        bool // send the whole body, not one byte
		want        int
	}
	attacks := []attack{
		{prefix + "/task/multipart", "multipart/form-data; boundary=x", 11 << 20, false, http.StatusUnauthorized},
		{prefix + "/tier1/synapse.telemetry", "application/msgpack", 4 << 20, false, http.StatusUnauthorized},
		{prefix + "/task", "application/json", 1 << 20, false, http.StatusUnauthorized},
		{prefix + "/message", "application/json", 1 << 20, true, 0}, // 400 or 503: not an envelope
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed []string
		done   = make(chan struct{})
	)
	start := time.Now()
	for i := range conns {
		at := attacks[i%len(attacks)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", at.path, addr, at.ctype, at.declared)
			body := []byte{'{'}
			if at.full {
				body = []byte(strings.Repeat("x", at.declared))
			}
			status, text, err := rawExchange(addr, req, body, deadline)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				failed = append(failed, fmt.Sprintf("%s: %v", at.path, err))
			case at.want != 0 && status != at.want:
				failed = append(failed, fmt.Sprintf("%s: %d %s, want %d", at.path, status, text, at.want))
			case at.want == 0 && status != http.StatusBadRequest && status != http.StatusServiceUnavailable:
				failed = append(failed, fmt.Sprintf("%s: %d %s, want 400 or 503", at.path, status, text))
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	peak := before
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for finished := false; !finished || time.Since(start) < holdFor; {
		select {
		case <-done:
			finished, done = true, nil
		case <-tick.C:
		}
		if time.Since(start) > deadline+5*time.Second {
			t.Fatal("the hostile clients did not finish")
		}
		peak = max(peak, rssBytes(t, pid))
	}
	t.Logf("VmRSS %d KiB before, peak %d KiB under %d token-less connections", before>>10, peak>>10, conns)
	if peak >= maxRSS {
		t.Errorf("peak VmRSS %d KiB, want under %d KiB", peak>>10, maxRSS>>10)
	}
	for _, f := range failed[:min(len(failed), 10)] {
		t.Error(f)
	}
	if len(failed) > 10 {
		t.Errorf("... and %d more", len(failed)-10)
	}
	a.submit(http.StatusCreated, `{"task_type":"echo","payload":{"after":true}}`)

	// Expect: 100-continue (curl sends it for large bodies): a request
	// without a token is refused before the client is asked for its body.
	status, text, err := rawExchange(addr, "POST "+prefix+"/task/multipart HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=x\r\n"+
		"Content-Length: 11534336\r\nExpect: 100-continue\r\n\r\n", nil, 10*time.Second)
	if err != nil || status != http.StatusUnauthorized {
		t.Errorf("Expect: 100-continue without a token: %d %s %v, want 401 before any body", status, text, err)
	}
}
