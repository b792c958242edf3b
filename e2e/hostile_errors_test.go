package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// tpCode is the error.code of a TPError body, "" when body is not one.
func tpCode(body string) string {
	var eb struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(body), &eb) != nil {
		return ""
	}
	return eb.Error.Code
}

// holdConns opens n keep-alive connections to addr, each answered once
// (so the agent has accepted it; a refused one is opened again), and
// keeps them open until the test ends.
func holdConns(t *testing.T, addr string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for held := 0; held < n; {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Write([]byte("GET " + prefix + "/health HTTP/1.1\r\nHost: x\r\n\r\n"))
		var resp *http.Response
		if err == nil {
			resp, err = http.ReadResponse(bufio.NewReader(c), nil)
		}
		if err == nil && resp.StatusCode == http.StatusOK {
			resp.Body.Close()
			_ = c.SetDeadline(time.Time{})
			t.Cleanup(func() { c.Close() })
			held++
			continue
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("could not hold %d connections: %v", n, err)
		}
		time.Sleep(pollEvery)
	}
}

// refusedWith polls fresh connections to addr (the held ones may not be
// accepted yet) until one is answered with status and code, or 5 s pass.
func refusedWith(t *testing.T, addr string, status int, code string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, body, err := rawExchange(addr, "GET "+prefix+"/health HTTP/1.1\r\nHost: x\r\n\r\n", nil, 5*time.Second)
		if err == nil && got == status && tpCode(body) == code {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("one connection too many: %d %s %v, want %d %s", got, body, err, status, code)
		}
		time.Sleep(pollEvery)
	}
}

// TestHostileCredentialsNotEchoed (issue #15, item 3): a request fasthttp
// cannot parse (a header value with byte 0x7f) carries a bearer token; at
// --log-level debug neither the answer nor the log may contain it.
func TestHostileCredentialsNotEchoed(t *testing.T) {
	a := startAgent(t, agentOpts{args: []string{"--log-level", "debug"}})
	addr := strings.TrimPrefix(a.url(), "http://")
	secret := "Bearer " + a.token
	for _, req := range []string{
		"GET " + prefix + "/tasks HTTP/1.1\r\nHost: x\r\nAuthorization: " + secret + "\r\nX-Bad: a\x7fb\r\n\r\n",
		"GET " + prefix + "/tasks HTTP/1.1\r\nHost: x\r\nAuthorization: " + secret + "\r\nBad Header\r\n\r\n",
		"POST " + prefix + "/task HTTP/1.1\r\nHost: x\r\nAuthorization: " + secret + "\r\nContent-Length: zz\r\n\r\n",
	} {
		status, body, err := rawExchange(addr, req, nil, 10*time.Second)
		if err != nil {
			t.Fatalf("%q: %v", req, err)
		}
		if status != http.StatusBadRequest || tpCode(body) == "" {
			t.Errorf("%q: got %d %s, want 400 with a TPError", req, status, body)
		}
		if strings.Contains(body, a.token) {
			t.Errorf("the answer repeats the token: %s", body)
		}
	}
	// the log is written as the requests are refused; give it one request
	// that certainly logs after them
	a.call(http.MethodGet, prefix+"/health", nil)
	if strings.Contains(a.stderr(), a.token) {
		t.Errorf("the log contains the bearer token:\n%s", a.stderr())
	}
}

// TestHostileErrorShapes (issue #15, item 10): the answers the server
// gives before any handler runs — too many connections from one address,
// too many connections, a read timeout — are TPErrors like every other;
// an upgrade error says "websocket" once; a lower-case bearer scheme is
// accepted; serve refuses an admin token shorter than 16 bytes.
func TestHostileErrorShapes(t *testing.T) {
	t.Run("per-IP connection limit", func(t *testing.T) {
		a := startAgent(t, agentOpts{args: []string{"--config", hostileConfig(t, `"http":{"max_conns_per_ip":4}`)}})
		addr := strings.TrimPrefix(a.url(), "http://")
		holdConns(t, addr, 4)
		refusedWith(t, addr, http.StatusTooManyRequests, "too_many_connections")
	})
	t.Run("connection limit", func(t *testing.T) {
		a := startAgent(t, agentOpts{args: []string{"--config", hostileConfig(t, `"http":{"max_conns":4}`)}})
		addr := strings.TrimPrefix(a.url(), "http://")
		holdConns(t, addr, 4)
		refusedWith(t, addr, http.StatusServiceUnavailable, "TP-SYS001")
	})
	t.Run("read timeout", func(t *testing.T) {
		a := startAgent(t, agentOpts{args: []string{"--config", hostileConfig(t, `"http":{"read_timeout_seconds":1}`)}})
		addr := strings.TrimPrefix(a.url(), "http://")
		status, body, err := rawExchange(addr, "GET "+prefix+"/health HTTP/1.1\r\nHost: x\r\n", nil, 10*time.Second)
		if err != nil || status != http.StatusRequestTimeout || tpCode(body) != "request_timeout" {
			t.Errorf("half a request: %d %s %v, want 408 request_timeout", status, body, err)
		}
	})
	a := startAgent(t, agentOpts{})
	t.Run("lower-case bearer", func(t *testing.T) {
		r := a.call(http.MethodGet, prefix+"/tasks", nil, "Authorization", "bearer "+a.token)
		if r.status != http.StatusOK {
			t.Errorf("bearer <token>: got %s, want 200", r)
		}
	})
	t.Run("upgrade error", func(t *testing.T) {
		r := a.call(http.MethodGet, prefix+"/tier1/stream", nil)
		if r.status/100 != 4 || tpCode(string(r.body)) == "" || strings.Contains(string(r.body), "websocket: websocket") {
			t.Errorf("GET /tier1/stream without an upgrade: got %s, want a 4xx TPError saying websocket once", r)
		}
	})
	t.Run("short admin token", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, synapseBin, "serve", "--data", t.TempDir(), "--listen", freeAddr(t))
		cmd.Env = append(cleanEnv(), "SYNAPSE_ADMIN_TOKEN=a")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if ctx.Err() != nil || !errors.As(err, &ee) || !strings.Contains(string(out), "SYNAPSE_ADMIN_TOKEN") {
			t.Errorf("serve with SYNAPSE_ADMIN_TOKEN=a: %v, output %q; want a non-zero exit naming the variable", err, out)
		}
	})
}
