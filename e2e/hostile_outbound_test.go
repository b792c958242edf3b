package e2e_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestHostileOutboundTargets: a tasks:write client names callback URLs on
// loopback, link-local (cloud metadata) and the agent's own API. By
// default each is refused with 400 outbound_target_refused and nothing is
// ever sent there; with outbound.allow (here SYNAPSE_OUTBOUND_ALLOW) a
// loopback webhook is accepted and called, while the agent's own API stays
// refused.
func TestHostileOutboundTargets(t *testing.T) {
	hits := make(chan string, 16)
	hook := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		hits <- r.URL.Path
	}), ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hook.Serve(ln) }()
	t.Cleanup(func() { _ = hook.Close() })
	hookURL := "http://" + ln.Addr().String()

	refused := func(t *testing.T, a *agentProc, url string) {
		t.Helper()
		r := a.call(http.MethodPost, prefix+"/task", []byte(`{"task_type":"echo","payload":{},"callback_url":"`+url+`"}`))
		var eb struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if r.status != http.StatusBadRequest || json.Unmarshal(r.body, &eb) != nil || eb.Error.Code != "outbound_target_refused" {
			t.Errorf("callback_url %s: got %s, want 400 outbound_target_refused", url, r)
		}
	}

	t.Run("default policy", func(t *testing.T) {
		a := startAgent(t, agentOpts{})
		for _, u := range []string{
			hookURL + "/loopback",
			"http://localhost:" + portOf(t, ln.Addr().String()) + "/name",
			"http://[::1]:9/v6",
			"http://169.254.169.254/latest/meta-data/",
			"http://10.0.0.1/private",
			"http://0.0.0.0:9/",
			a.url() + prefix + "/tokens",
		} {
			refused(t, a, u)
		}
		// A2A push configs pass the same policy.
		_, id := a.submit(http.StatusCreated, `{"task_type":"sleep","payload":{"ms":5000}}`)
		r := a.call(http.MethodPost, "/a2a", []byte(`{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"`+id+`","id":"c1","url":"http://169.254.169.254/"}}`))
		var rpc struct {
			Error *struct{ Code int } `json:"error"`
		}
		if r.status != http.StatusOK || json.Unmarshal(r.body, &rpc) != nil || rpc.Error == nil || rpc.Error.Code != -32602 {
			t.Errorf("A2A push to link-local: got %s, want a JSON-RPC error -32602", r)
		}
		select {
		case p := <-hits:
			t.Errorf("the hook was called (%s) although every target was refused", p)
		default:
		}
	})

	t.Run("allow-list", func(t *testing.T) {
		a := startAgent(t, agentOpts{env: []string{"SYNAPSE_OUTBOUND_ALLOW=127.0.0.0/8"}})
		a.submit(http.StatusCreated, `{"task_type":"echo","payload":{},"callback_url":"`+hookURL+`/allowed"}`)
		select {
		case p := <-hits:
			if p != "/allowed" {
				t.Errorf("hook called at %s, want /allowed", p)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the allowed webhook was not called within 15s")
		}
		refused(t, a, a.url()+prefix+"/tokens")
	})
}

func portOf(t *testing.T, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
