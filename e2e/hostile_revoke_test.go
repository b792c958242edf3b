package e2e_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/synapse-edge/synapse/wire"
)

// TestHostileRevokedTokenStreams (issue #15, item 2): streams opened with
// a token — the tier-1 WebSocket, task, callback and HIL SSE, the P2P
// message and group WebSockets — end within a second of DELETE /tokens/{id}; the tier-1
// WebSocket acknowledges no batch after it.
func TestHostileRevokedTokenStreams(t *testing.T) {
	const within = time.Second
	a := startAgent(t, agentOpts{args: []string{"--grace", "1s"}})
	r := a.call(http.MethodPost, prefix+"/tokens", []byte(`{"name":"victim","scopes":["tasks:write","tier1:write"]}`))
	var tok struct {
		ID    string `json:"token_id"`
		Token string `json:"token"`
	}
	if r.status != http.StatusCreated || json.Unmarshal(r.body, &tok) != nil || tok.Token == "" {
		t.Fatalf("POST /tokens: %s", r)
	}
	hdr := http.Header{"Authorization": {"Bearer " + tok.Token}}
	_, task := a.submit(http.StatusCreated, `{"task_type":"sleep","payload":{"ms":60000}}`)

	// ended is closed when a stream's reader sees its end.
	type stream struct {
		name  string
		ended chan struct{}
	}
	var streams []stream
	openSSE := func(name, path string) {
		req, err := http.NewRequest(http.MethodGet, a.url()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = hdr.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", name, resp.StatusCode)
		}
		t.Cleanup(func() { resp.Body.Close() })
		s := stream{name, make(chan struct{})}
		go func() {
			defer close(s.ended)
			rd := bufio.NewReader(resp.Body)
			for {
				if _, err := rd.ReadString('\n'); err != nil {
					return
				}
			}
		}()
		streams = append(streams, s)
	}
	wsURL := "ws" + strings.TrimPrefix(a.url(), "http")
	dial := func(name, path string) *websocket.Conn {
		c, _, err := websocket.DefaultDialer.Dial(wsURL+path, hdr)
		if err != nil {
			t.Fatalf("%s: dial: %v", name, err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	openSSE("task SSE", prefix+"/task/"+task+"/stream")
	openSSE("callback SSE", prefix+"/messages/callback")
	openSSE("HIL SSE", prefix+"/hil/stream")
	readAll := func(name, path string) {
		c := dial(name, path)
		s := stream{name, make(chan struct{})}
		go func() {
			defer close(s.ended)
			for {
				if _, _, err := c.ReadMessage(); err != nil {
					return
				}
			}
		}()
		streams = append(streams, s)
	}
	readAll("message WebSocket", prefix+"/messages/stream")
	r = a.call(http.MethodPost, prefix+"/group", []byte(`{"name":"g"}`))
	var g struct {
		ID string `json:"group_id"`
	}
	if r.status != http.StatusCreated || json.Unmarshal(r.body, &g) != nil || g.ID == "" {
		t.Fatalf("POST /group: %s", r)
	}
	readAll("group WebSocket", prefix+"/group/"+g.ID+"/messages/stream")

	t1 := dial("tier-1 WebSocket", prefix+"/tier1/stream")
	acks := make(chan t1Ack, 16)
	t1s := stream{"tier-1 WebSocket", make(chan struct{})}
	go func() {
		defer close(t1s.ended)
		for {
			_, m, err := t1.ReadMessage()
			if err != nil {
				return
			}
			var ack t1Ack
			_ = wire.Msgpack.Unmarshal(m, &ack)
			acks <- ack
		}
	}()
	streams = append(streams, t1s)
	if err := t1.WriteMessage(websocket.BinaryMessage, t1Batch("before", "rv", 0, 10)); err != nil {
		t.Fatal(err)
	}
	select {
	case ack := <-acks:
		if !ack.OK {
			t.Fatalf("batch before revocation: %+v", ack)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no acknowledgement before revocation")
	}

	if r := a.call(http.MethodDelete, prefix+"/tokens/"+tok.ID, nil); r.status/100 != 2 {
		t.Fatalf("DELETE /tokens/%s: %s", tok.ID, r)
	}
	revoked := time.Now()
	_ = t1.WriteMessage(websocket.BinaryMessage, t1Batch("after", "rv", 10, 10))
	for _, s := range streams {
		select {
		case <-s.ended:
		case <-time.After(time.Until(revoked.Add(within))):
			t.Errorf("%s still open %s after the token was revoked", s.name, time.Since(revoked).Round(time.Millisecond))
		}
	}
	select {
	case ack := <-acks:
		if ack.OK {
			t.Errorf("batch %s acknowledged after the token was revoked", ack.BatchID)
		}
	default:
	}
	if r := a.call(http.MethodGet, prefix+"/tasks", nil, "Authorization", "Bearer "+tok.Token); r.status != http.StatusUnauthorized {
		t.Errorf("plain request with the revoked token: %s, want 401", r)
	}
}
