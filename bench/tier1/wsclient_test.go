package main

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/wire"
)

// agentAck has the fields and tags of the agent's answer (wire.Tier1Ack).
type agentAck struct {
	OK        bool        `msgpack:"ok"`
	Accepted  int         `msgpack:"accepted"`
	BatchID   string      `msgpack:"batch_id,omitempty"`
	Duplicate bool        `msgpack:"duplicate,omitempty"`
	Error     *wire.Error `msgpack:"error,omitempty"`
}

func TestParseAck(t *testing.T) {
	for _, a := range []agentAck{
		{OK: true, Accepted: 1, BatchID: "b-1"},
		{OK: true, Accepted: 0},
		{OK: true, Accepted: 200, BatchID: strings.Repeat("x", 40), Duplicate: true},
		{OK: true, Accepted: 70000, BatchID: strings.Repeat("y", 300)},
	} {
		b, err := wire.Msgpack.Marshal(&a)
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseAck(b)
		if err != nil || got != a.Accepted {
			t.Errorf("%+v: got %d, %v; want %d", a, got, err, a.Accepted)
		}
	}
	refused, err := wire.Msgpack.Marshal(&agentAck{BatchID: "b-2", Error: wire.Errorf(wire.CodeInvalidParams, "bad frame")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseAck(refused); !errors.Is(err, errAckRefused) || !strings.Contains(err.Error(), "bad frame") {
		t.Errorf("a refusal: got %v, want errAckRefused with the server's message", err)
	}
	for _, bad := range [][]byte{nil, {0x82, 0xa2, 'o', 'k'}, {0xc0}} {
		if _, err := parseAck(bad); err == nil {
			t.Errorf("%x: no error", bad)
		}
	}
}

// A window of one still delivers every batch, one round trip each.
func TestWSIngestWindowOne(t *testing.T) {
	s, err := startSink()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.close() })
	msgs := newGenerator(1).batches(0, 50, 1, "w")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, acked, err := wsIngest(ctx, s.url(), "", msgs, 1); err != nil || acked != 50 {
		t.Fatalf("got %d frames acked, %v; want 50", acked, err)
	}
}

func BenchmarkWSIngestSink(b *testing.B) {
	s, err := startSink()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.close() })
	msgs := newGenerator(1).batches(0, b.N, 1, "bench")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	if _, acked, err := wsIngest(ctx, s.url(), "", msgs, 4096); err != nil || acked != b.N {
		b.Fatalf("got %d frames acked, %v; want %d", acked, err, b.N)
	}
}

// FuzzParseAck: the in-place reader of answers never panics, and what it
// accepts the msgpack decoder reads the same way.
func FuzzParseAck(f *testing.F) {
	for _, a := range []agentAck{{OK: true, Accepted: 1, BatchID: "b-1"}, {OK: true, Accepted: 300, Duplicate: true}} {
		b, err := wire.Msgpack.Marshal(&a)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		n, ok := parseOKAck(p)
		if !ok {
			_, _ = parseAck(p)
			return
		}
		var a wsAck
		if err := wire.Msgpack.Unmarshal(p, &a); err != nil || !a.OK || a.Accepted != n {
			t.Fatalf("%x: parseOKAck says %d; msgpack: %+v, %v", p, n, a, err)
		}
	})
}

// startOddServer serves one WebSocket with serve, on a free port.
func startOddServer(t *testing.T, serve func(c *websocket.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := websocket.FastHTTPUpgrader{}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { _ = up.Upgrade(ctx, serve) }}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return "ws://" + ln.Addr().String() + "/"
}

// The client answers a ping (the agent pings every 30 s) and goes on.
func TestWSIngestAnswersPings(t *testing.T) {
	ponged := make(chan string, 1)
	url := startOddServer(t, func(c *websocket.Conn) {
		c.SetPongHandler(func(s string) error { ponged <- s; return nil })
		if err := c.WriteControl(websocket.PingMessage, []byte("are you there"), time.Now().Add(time.Second)); err != nil {
			return
		}
		for {
			_, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			n, _ := batchFrameCount(msg)
			if c.WriteMessage(websocket.BinaryMessage, appendOKAck(nil, n)) != nil {
				return
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msgs := newGenerator(1).batches(0, 20, 1, "p")
	if _, acked, err := wsIngest(ctx, url, "", msgs, 4); err != nil || acked != 20 {
		t.Fatalf("got %d frames acked, %v; want 20", acked, err)
	}
	select {
	case s := <-ponged:
		if s != "are you there" {
			t.Fatalf("pong %q, want the ping's payload", s)
		}
	case <-ctx.Done():
		t.Fatal("no pong")
	}
}

// A server that closes the connection before answering everything is an
// error, with its close frame's reason.
func TestWSIngestServerCloses(t *testing.T) {
	url := startOddServer(t, func(c *websocket.Conn) {
		_, _, _ = c.ReadMessage()
		_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "agent shutting down"),
			time.Now().Add(time.Second))
		for { // read until the client goes
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err := wsIngest(ctx, url, "", newGenerator(1).batches(0, 5, 1, "c"), 8)
	if err == nil || !strings.Contains(err.Error(), "agent shutting down") {
		t.Fatalf("got %v, want the server's close reason", err)
	}
}
