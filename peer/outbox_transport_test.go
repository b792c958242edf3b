package peer_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/handlers"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/internal/testutil/transporttest"
	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// TestOutboxFakeTransport: the network delivers its outbox through
// package outbox's queue with the agent's transport and clock and its own
// p2p settings (max_retries, retry_base_delay_ms, the callback secret):
// a webhook of a finished task retried on the agent's clock, given up
// after max_retries, signed. The queue's retries, back-off, dead letters
// and requeue are tested in package outbox (queue_test.go), against a
// transport fake too.
func TestOutboxFakeTransport(t *testing.T) {
	clock := newFakeClock()
	fake := &transporttest.Scripted{}
	cfg := testConfig(t)
	p2p := peer.DefaultConfig()
	p2p.MaxRetries = 2
	p2p.RetryBaseDelayMS = 1000
	p2p.CallbackSecret = "s3cret"
	ag, err := agent.New(cfg, agent.Options{Clock: clock, Transport: fake})
	if err != nil {
		t.Fatal(err)
	}
	if err := handlers.Register(ag, handlers.Options{}); err != nil {
		t.Fatal(err)
	}
	nw, err := peer.New(ag, peer.Options{Config: &p2p})
	if err != nil {
		t.Fatal(err)
	}
	a := &node{Agent: ag, Network: nw}
	ctx := context.Background()
	if err := a.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_ = a.Close(cctx)
	})

	fake.Add(
		transport.Outcome{Class: transport.Retry, Status: 503, Unreached: true},
		transport.Outcome{Class: transport.Retry, Unreached: true},
		transport.Outcome{Class: transport.Retry, Status: 503, Unreached: true},
	)
	url := "http://192.0.2.10/retried" // TEST-NET-1: never dialled
	task, err := a.Submit(ctx, admin, &wire.SubmitRequest{TaskType: "echo", Payload: wire.JSONValue(`{}`), CallbackURL: url}, agent.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFinal(t, a, task.ID)
	entry := func(state outbox.State) *peer.OutboxEntry {
		t.Helper()
		items, _, err := a.Outbox().List(peer.OutboxQuery{State: string(state), URL: url})
		if err != nil {
			t.Fatal(err)
		}
		if len(items) == 0 {
			return nil
		}
		return &items[0]
	}
	testutil.Eventually(t, 10*time.Second, "the first failure to be recorded", func() bool {
		e := entry(outbox.Pending)
		return e != nil && e.Attempts == 1
	})
	if fake.Sends() != 1 {
		t.Fatalf("%d sends before the agent's clock moved, want 1", fake.Sends())
	}
	testutil.Eventually(t, 10*time.Second, "a dead letter after max_retries on the agent's clock", func() bool {
		clock.Advance(time.Hour) // retry_base_delay_ms 1000: each back-off is within a few seconds
		return entry(outbox.Dead) != nil
	})
	if d := entry(outbox.Dead); d.Attempts != 3 || !strings.Contains(d.LastError, "scripted retry") {
		t.Errorf("dead letter: %d attempts, last error %q; want 3 and the transport's error", d.Attempts, d.LastError)
	}
	// The counter moves just after the dead letter is stored.
	testutil.Eventually(t, 10*time.Second, "synapse_outbox_dead_total to be 1", func() bool {
		return metric(t, a, "synapse_outbox_dead_total") == 1
	})
	for i, m := range fake.Sent() {
		if m.Kind != transport.Callback || m.To != url || m.ContentType != wire.ContentJSON ||
			m.Header[transport.HeaderMessageID] == "" || len(m.Body) == 0 {
			t.Errorf("send %d: kind %v to %q type %q header %v", i, m.Kind, m.To, m.ContentType, m.Header)
		}
		if err := wire.VerifyHMAC(m.Header[transport.HeaderSignature], [][]byte{[]byte("s3cret")}, m.Body, clock.Now(), 10*365*24*time.Hour); err != nil {
			t.Errorf("send %d: signature: %v", i, err)
		}
	}
}
