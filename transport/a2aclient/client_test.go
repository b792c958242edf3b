package a2aclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/a2a"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/transport/httptransport"
)

// TestOutcome: each kind of A2A answer gets its class (the answers are
// what a2a-go's and Synapse's servers send).
func TestOutcome(t *testing.T) {
	for _, tt := range []struct {
		name       string
		status     int
		header     string
		body       string
		class      transport.Class
		unreached  bool
		retryAfter time.Duration
	}{
		{"result", 200, "", `{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"x","contextId":"x","status":{"state":"TASK_STATE_SUBMITTED"}}}}`, transport.Delivered, false, 0},
		{"task not found", 200, "", `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"task not found"}}`, transport.Permanent, false, 0},
		{"unsupported", 200, "", `{"jsonrpc":"2.0","id":1,"error":{"code":-32004,"message":"no handler"}}`, transport.Permanent, false, 0},
		{"internal", 200, "", `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"disk full"}}`, transport.Retry, false, 0},
		{"synapse's retriable TPError", 200, "", `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"store",` +
			`"data":[{"@type":"` + a2a.TypeStruct + `","code":"storage_unavailable","message":"store","retriable":true}]}}`, transport.Retry, false, 0},
		{"rate limited", 429, "3", `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"busy",` +
			`"data":[{"@type":"` + a2a.TypeErrorInfo + `","reason":"RATE_LIMITED","domain":"a2a-protocol.org"}]}}`, transport.Retry, false, 3 * time.Second},
		{"rate limited in a 200", 200, "", `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"busy",` +
			`"data":[{"@type":"` + a2a.TypeErrorInfo + `","reason":"RATE_LIMITED","domain":"a2a-protocol.org"}]}}`, transport.Retry, false, time.Second},
		{"unauthenticated", 401, "", `{"jsonrpc":"2.0","id":null,"error":{"code":-31401,"message":"no token"}}`, transport.Retry, true, 0},
		{"unavailable", 503, "7", `oops`, transport.Retry, true, 7 * time.Second},
		{"gone", 410, "", ``, transport.Permanent, false, 0},
		{"no JSON-RPC", 200, "", `<html>`, transport.Retry, false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if got := r.Header.Get("Authorization"); got != "Bearer tk" {
					t.Errorf("Authorization %q", got)
				}
				if tt.header != "" {
					w.Header().Set("Retry-After", tt.header)
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			c := &client{wire: httptransport.New(httptransport.Options{})}
			var res sendResult
			o := c.call(context.Background(), srv.URL, "Bearer tk", "SendMessage", map[string]any{}, &res)
			if o.Class != tt.class || o.Unreached != tt.unreached || o.RetryAfter != tt.retryAfter {
				t.Errorf("%v unreached=%v retry after %v (%v), want %v %v %v", o.Class, o.Unreached, o.RetryAfter, o.Err, tt.class, tt.unreached, tt.retryAfter)
			}
			if o.Delivered() != (o.Err == nil) {
				t.Errorf("Err %v with class %v", o.Err, o.Class)
			}
		})
	}
}

func TestEndpoint(t *testing.T) {
	for to, want := range map[string]string{
		"a2a+http://127.0.0.1:8081/a2a": "http://127.0.0.1:8081/a2a",
		"a2a+https://peer.example/a2a":  "https://peer.example/a2a",
		"http://peer/a2a":               "",
		"a2a+ftp://peer/a2a":            "",
		"a2a+http://":                   "",
	} {
		got, err := endpoint(to)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("endpoint(%q) = %q, %v; want %q", to, got, err, want)
		}
	}
}

// TestResult: the result is the data of the result artifact, else text.
func TestResult(t *testing.T) {
	text := "hello"
	for _, tt := range []struct {
		name string
		arts []a2a.Artifact
		want string
	}{
		{"none", nil, `null`},
		{"data", []a2a.Artifact{{ArtifactID: "other", Parts: []a2a.Part{{Data: []byte(`{"a":1}`)}}},
			{ArtifactID: "result", Parts: []a2a.Part{{Data: []byte(`{"b":2}`)}}}}, `{"b":2}`},
		{"first", []a2a.Artifact{{ArtifactID: "x", Parts: []a2a.Part{{Data: []byte(`[1]`)}}}}, `[1]`},
		{"text", []a2a.Artifact{{ArtifactID: "x", Parts: []a2a.Part{{Text: &text}}}}, `{"text":"hello"}`},
	} {
		if got := string(result(&a2a.Task{Artifacts: tt.arts})); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}
