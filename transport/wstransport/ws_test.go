package wstransport_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/transport/wstransport"
	"github.com/synapse-edge/synapse/wire"
)

// upstream is a stand-in for an agent's /tier1/stream: it answers each
// binary message with answer(body), or closes the connection when answer
// returns nil; it records the handshake headers and the bodies.
type upstream struct {
	*httptest.Server
	answer func(body []byte) []byte

	mu      sync.Mutex
	headers []http.Header
	bodies  []string
}

func startUpstream(t *testing.T, answer func([]byte) []byte) *upstream {
	t.Helper()
	u := &upstream{answer: answer}
	up := websocket.Upgrader{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != wstransport.StreamPath {
			http.NotFound(w, r)
			return
		}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		u.mu.Lock()
		u.headers = append(u.headers, r.Header.Clone())
		u.mu.Unlock()
		for {
			_, b, err := c.ReadMessage()
			if err != nil {
				return
			}
			u.mu.Lock()
			u.bodies = append(u.bodies, string(b))
			u.mu.Unlock()
			a := u.answer(b)
			if a == nil {
				return
			}
			if err := c.WriteMessage(websocket.BinaryMessage, a); err != nil {
				return
			}
		}
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) endpoint() string { return "ws" + strings.TrimPrefix(u.URL, "http") }

func ok() []byte {
	b, _ := wire.Msgpack.Marshal(map[string]any{"ok": true, "accepted": 1, "batch_id": "x"})
	return b
}

func refused(code wire.ErrorCode) []byte {
	b, _ := wire.Msgpack.Marshal(map[string]any{"ok": false, "error": wire.Errorf(code, "no")})
	return b
}

func batch(to, body string) *transport.Message {
	return &transport.Message{Kind: transport.Batch, To: to, Body: []byte(body),
		Header: map[string]string{transport.HeaderAuthorization: "Bearer tok", transport.HeaderSourceAgent: "edge-1",
			transport.HeaderRoutine: "synapse.telemetry"}}
}

func TestSendMany(t *testing.T) {
	u := startUpstream(t, func(b []byte) []byte {
		switch string(b) {
		case "bad":
			return refused(wire.CodeMessageFormatInvalid)
		case "busy":
			return refused(wire.CodeSysOverloaded)
		}
		return ok()
	})
	tr := wstransport.New()
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ms := []*transport.Message{batch(u.endpoint(), "a"), batch(u.endpoint(), "bad"), batch(u.endpoint(), "busy"),
		{Kind: transport.Envelope, To: u.endpoint()}, batch(u.endpoint(), "b")}
	outs := tr.SendMany(ctx, ms)
	want := []transport.Class{transport.Delivered, transport.Permanent, transport.Retry, transport.Permanent, transport.Delivered}
	for i, o := range outs {
		if o.Class != want[i] {
			t.Errorf("message %d: %v (%v), want %v", i, o.Class, o.Err, want[i])
		}
	}
	// Again, on the same connection.
	if o := tr.Send(ctx, batch(u.endpoint(), "c")); !o.Delivered() {
		t.Fatalf("second window: %v %v", o.Class, o.Err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if got := strings.Join(u.bodies, ","); got != "a,bad,busy,b,c" {
		t.Errorf("the upstream got %s, want a,bad,busy,b,c (in order, the envelope not sent)", got)
	}
	if len(u.headers) != 1 || u.headers[0].Get("Authorization") != "Bearer tok" || u.headers[0].Get(transport.HeaderSourceAgent) != "edge-1" {
		t.Errorf("handshakes %v, want one with the token and the source agent", u.headers)
	}
}

// A connection that breaks, or answers what is not an answer, leaves the
// unanswered batches Retry, unreached; the next window dials again.
func TestBrokenUpstream(t *testing.T) {
	var n int
	var mu sync.Mutex
	u := startUpstream(t, func(b []byte) []byte {
		mu.Lock()
		defer mu.Unlock()
		n++
		switch {
		case string(b) == "garbage":
			return []byte{0xc1}
		case n == 2:
			return nil // hang up before answering the second
		}
		return ok()
	})
	tr := wstransport.New()
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	outs := tr.SendMany(ctx, []*transport.Message{batch(u.endpoint(), "a"), batch(u.endpoint(), "b"), batch(u.endpoint(), "c")})
	if !outs[0].Delivered() || outs[1].Class != transport.Retry || !outs[1].Unreached || outs[2].Class != transport.Retry {
		t.Fatalf("outcomes %v %v %v, want Delivered, Retry unreached, Retry", outs[0].Class, outs[1].Class, outs[2].Class)
	}
	if o := tr.Send(ctx, batch(u.endpoint(), "b")); !o.Delivered() {
		t.Fatalf("after the break: %v %v, want Delivered on a new connection", o.Class, o.Err)
	}
	if o := tr.Send(ctx, batch(u.endpoint(), "garbage")); o.Class != transport.Retry || !o.Unreached {
		t.Fatalf("an answer that is not one: %v %v, want Retry unreached", o.Class, o.Err)
	}
	if o := tr.Send(ctx, batch("http://127.0.0.1:1", "x")); o.Class != transport.Permanent {
		t.Fatalf("an http:// destination: %v, want Permanent", o.Class)
	}
	short, cancel2 := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel2()
	u.Close()
	if o := tr.Send(short, batch(u.endpoint(), "d")); o.Class != transport.Retry || !o.Unreached {
		t.Fatalf("upstream gone: %v %v, want Retry unreached", o.Class, o.Err)
	}
}
