package mqtt_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/transport/mqtt"
	"github.com/synapse-edge/synapse/transport/mqtt/mqtttest"
	"github.com/synapse-edge/synapse/wire"
)

// applier stands for a peer network at the transport seam: it applies a
// body once and answers a repeat as a duplicate, as peer.Network does by
// message id.
type applier struct {
	mu      sync.Mutex
	applied map[string]int
	headers []map[string]string
	refuse  bool
}

func (a *applier) Receive(_ context.Context, in *transport.Inbound) transport.Answer {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.refuse {
		e := wire.Errorf(wire.CodeIDUnknownSender, "who are you")
		b, _ := wire.JSON.Marshal(wire.ErrorBody{Error: e})
		return transport.Answer{Status: e.Status(), Body: b, ContentType: wire.ContentJSON, Error: e}
	}
	a.headers = append(a.headers, in.Header)
	id := string(in.Body)
	a.applied[id]++
	if a.applied[id] > 1 {
		return transport.Answer{Status: 200, Body: []byte(`{"accepted":true,"duplicate":true}`), ContentType: wire.ContentJSON}
	}
	return transport.Answer{Status: 202, Body: []byte(`{"accepted":true,"message_id":"` + id + `"}`), ContentType: wire.ContentJSON}
}

func (a *applier) count(id string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.applied[id]
}

func envelope(to, id string) *transport.Message {
	return &transport.Message{Kind: transport.Envelope, To: to, Body: []byte(id), ContentType: wire.ContentJSON,
		Header: map[string]string{transport.HeaderSeq: "7", transport.HeaderSeqPrev: "6"}}
}

func send(t *testing.T, tr *mqtt.Transport, m *transport.Message, within time.Duration) transport.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	return tr.Send(ctx, m)
}

func TestEnvelopeOverBroker(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	opts := mqtt.Options{URL: b.URL(), MaxReconnectInterval: 200 * time.Millisecond}
	a := startTransport(t, opts, "s", "agent-a")
	app := &applier{applied: map[string]int{}}
	bt, err := mqtt.NewTransport(opts)
	if err != nil {
		t.Fatal(err)
	}
	bt.SetReceiver(app)
	bt.SetDocuments(func(_ context.Context, path string) ([]byte, string, bool) {
		return []byte(`{"agent_id":"agent-b"}`), wire.ContentJSON, path == "/api/v1/synapse/identity"
	})
	if err := bt.Start(context.Background(), "s", "agent-b"); err != nil {
		t.Fatal(err)
	}
	defer bt.Close(context.Background())
	waitUp(t, a.Client(), bt.Client())

	t.Run("fetch a document", func(t *testing.T) {
		o := send(t, a, &transport.Message{Kind: transport.Fetch, To: "mqtt:///agent-b/api/v1/synapse/identity"}, 10*time.Second)
		if !o.Delivered() || string(o.Reply) != `{"agent_id":"agent-b"}` {
			t.Fatalf("identity: %v %q %v", o.Class, o.Reply, o.Err)
		}
		o = send(t, a, &transport.Message{Kind: transport.Fetch, To: "mqtt:///agent-b/api/v1/synapse/tasks"}, 10*time.Second)
		if o.Class != transport.Permanent || o.Status != 404 {
			t.Fatalf("another path: %v %d %v, want Permanent 404", o.Class, o.Status, o.Err)
		}
		if n := len(app.headers); n != 0 {
			t.Fatalf("a fetch reached the receiver (%d)", n)
		}
	})

	o := send(t, a, envelope("mqtt:///agent-b", "m1"), 10*time.Second)
	if !o.Delivered() || o.Status != 202 || !strings.Contains(string(o.Reply), `"m1"`) {
		t.Fatalf("first send: %v %d %q %v", o.Class, o.Status, o.Reply, o.Err)
	}
	if h := app.headers[0]; h[transport.HeaderSeq] != "7" || h[transport.HeaderSeqPrev] != "6" {
		t.Errorf("headers at the receiver: %v", h)
	}
	// The same envelope again (a retry after a lost answer): delivered,
	// applied once.
	if o := send(t, a, envelope(b.URL()+"/agent-b", "m1"), 10*time.Second); !o.Delivered() || o.Status != 200 {
		t.Fatalf("resend: %v %d %v", o.Class, o.Status, o.Err)
	}
	if n := app.count("m1"); n != 2 {
		t.Fatalf("the receiver saw m1 %d times, want 2 (it answers the second as a duplicate)", n)
	}

	t.Run("refusal is classified", func(t *testing.T) {
		app.mu.Lock()
		app.refuse = true
		app.mu.Unlock()
		defer func() { app.mu.Lock(); app.refuse = false; app.mu.Unlock() }()
		o := send(t, a, envelope("mqtt:///agent-b", "m2"), 10*time.Second)
		if o.Class != transport.Retry || !o.Unreached || o.Error == nil || o.Error.Code != wire.CodeIDUnknownSender {
			t.Fatalf("got %v unreached=%v %+v, want Retry unreached with %s", o.Class, o.Unreached, o.Error, wire.CodeIDUnknownSender)
		}
	})

	t.Run("bad endpoints are refused", func(t *testing.T) {
		for _, to := range []string{"mqtt://", "mqtt:///a/b", "mqtt:///a+", "mqtt://10.9.9.9:1883/agent-b"} {
			if o := send(t, a, envelope(to, "x"), time.Second); o.Class != transport.Permanent {
				t.Errorf("%s: %v %v, want Permanent", to, o.Class, o.Err)
			}
		}
	})

	// The PUBACK is not delivery: with the receiver away the send ends
	// unreached although the broker took it; once the receiver is back
	// the broker hands it the request (its persistent session), and the
	// sender's retry is answered as a duplicate.
	t.Run("receiver away", func(t *testing.T) {
		_ = bt.Close(context.Background())
		o := send(t, a, envelope("mqtt:///agent-b", "m3"), 500*time.Millisecond)
		if o.Class != transport.Retry || !o.Unreached || !strings.Contains(o.Err.Error(), "no answer from agent-b") {
			t.Fatalf("got %v %v, want Retry unreached (no answer)", o.Class, o.Err)
		}
		b2, err := mqtt.NewTransport(opts)
		if err != nil {
			t.Fatal(err)
		}
		b2.SetReceiver(app)
		if err := b2.Start(context.Background(), "s", "agent-b"); err != nil {
			t.Fatal(err)
		}
		defer b2.Close(context.Background())
		testutil.Eventually(t, 10*time.Second, "the queued request applied", func() bool { return app.count("m3") == 1 })
		if o := send(t, a, envelope("mqtt:///agent-b", "m3"), 10*time.Second); !o.Delivered() || o.Status != 200 {
			t.Fatalf("retry: %v %d %v", o.Class, o.Status, o.Err)
		}
		if n := app.count("m3"); n != 2 {
			t.Fatalf("m3 seen %d times, want 2", n)
		}

		// The broker restarts (no persistence: the sessions are gone):
		// a send in flight ends unreached or goes through once both
		// are back; either way m4 is applied once and then answered as a
		// duplicate.
		b.Restart()
		var o4 transport.Outcome
		testutil.Eventually(t, 20*time.Second, "m4 delivered after the broker restart", func() bool {
			o4 = send(t, a, envelope("mqtt:///agent-b", "m4"), time.Second)
			return o4.Delivered()
		})
		if n := app.count("m4"); n < 1 {
			t.Fatalf("m4 delivered but not applied")
		}
	})
}

func waitUp(t *testing.T, cs ...*mqtt.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range cs {
		if err := c.WaitUp(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// Garbage on an inbox is counted and dropped; the inbox keeps working.
func TestInboxHostile(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	opts := mqtt.Options{URL: b.URL()}
	app := &applier{applied: map[string]int{}}
	bt, err := mqtt.NewTransport(opts)
	if err != nil {
		t.Fatal(err)
	}
	bt.SetReceiver(app)
	if err := bt.Start(context.Background(), "s", "agent-b"); err != nil {
		t.Fatal(err)
	}
	defer bt.Close(context.Background())
	raw := startClient(t, mqtt.Options{URL: b.URL(), ClientID: "attacker"})
	a := startTransport(t, opts, "s", "agent-a")
	waitUp(t, bt.Client(), a.Client())
	// A good envelope answered first: the inbox subscription is in place
	// before the garbage is published (a message published before the
	// broker granted it reaches no one, and would not be counted).
	testutil.Eventually(t, 30*time.Second, "an envelope delivered before the garbage", func() bool {
		return send(t, a, envelope("mqtt:///agent-b", "before"), 3*time.Second).Delivered()
	})
	ctx := context.Background()
	garbage := [][]byte{nil, []byte("SYNQ"), []byte("SYNQ\x01\x01\x00"), []byte("{\"message_id\":\"x\"}"),
		append([]byte("SYNQ\x01\x01\x01a\x01b\x00\x00\x00\x00"), 0xff, 0xff, 0xff, 0xff)}
	for _, g := range garbage {
		if err := raw.Publish(ctx, "synapse/agents/agent-b/inbox", g, false); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 30*time.Second, "every malformed message counted", func() bool {
		return bt.Malformed.Load() == uint64(len(garbage))
	})
	if o := send(t, a, envelope("mqtt:///agent-b", "after"), 10*time.Second); !o.Delivered() {
		t.Fatalf("after garbage: %v %v", o.Class, o.Err)
	}
}
