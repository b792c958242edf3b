package mqtt_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/transport/mqtt"
	"github.com/synapse-edge/synapse/transport/mqtt/mqtttest"
)

func startTransport(t *testing.T, o mqtt.Options, system, agent string) *mqtt.Transport {
	t.Helper()
	tr, err := mqtt.NewTransport(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(context.Background(), system, agent); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close(context.Background()) })
	return tr
}

func batchMessage(to, routine string, body []byte) *transport.Message {
	return &transport.Message{Kind: transport.Batch, To: to, Body: body,
		Header: map[string]string{transport.HeaderRoutine: routine, transport.HeaderSourceAgent: "gw-7"}}
}

func TestTransportBatch(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	got := newReceived()
	sub := startClient(t, mqtt.Options{URL: b.URL(), ClientID: "cloud"})
	ctx := context.Background()
	if err := sub.Subscribe(ctx, "fleet/#", got.handle); err != nil {
		t.Fatal(err)
	}
	tr := startTransport(t, mqtt.Options{URL: b.URL(), TopicPrefix: "fleet"}, "plant-a", "gw-7")
	for _, to := range []string{"mqtt://", b.URL()} {
		if o := tr.Send(ctx, batchMessage(to, "synapse.telemetry", []byte{0x94})); !o.Delivered() {
			t.Fatalf("send to %s: %v %v", to, o.Class, o.Err)
		}
		topic, payload := got.next(t)
		if topic != "fleet/plant-a/gw-7/tier1/synapse.telemetry" || payload != "\x94" {
			t.Fatalf("got %q %q", topic, payload)
		}
	}

	for _, tc := range []struct {
		name string
		m    *transport.Message
		says string
	}{
		{"another broker", batchMessage("mqtt://10.1.1.1:1883", "r", nil), "not this agent's broker"},
		{"wildcard routine", batchMessage("mqtt://", "r/#", nil), "capability_id"},
		{"no routine", batchMessage("mqtt://", "", nil), "capability_id"},
		{"a callback", &transport.Message{Kind: transport.Callback, To: "mqtt://"}, "no callback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tr.Send(ctx, tc.m)
			if o.Class != transport.Permanent || !strings.Contains(o.Err.Error(), tc.says) {
				t.Fatalf("got %v %v, want Permanent saying %q", o.Class, o.Err, tc.says)
			}
		})
	}
}

// Before Start, and while the broker is away, a Send waits for its ctx
// and answers Retry, unreached; the message goes once the broker is back.
func TestTransportUnreached(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	tr, err := mqtt.NewTransport(mqtt.Options{URL: b.URL(), MaxReconnectInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close(context.Background())
	short := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	if o := tr.Send(short(), batchMessage("mqtt://", "r", nil)); o.Class != transport.Retry || !o.Unreached {
		t.Fatalf("before Start: %v unreached=%v, want Retry unreached", o.Class, o.Unreached)
	}
	b.Stop()
	if err := tr.Start(context.Background(), "s", "a"); err != nil {
		t.Fatal(err)
	}
	if o := tr.Send(short(), batchMessage("mqtt://", "r", nil)); o.Class != transport.Retry || !o.Unreached {
		t.Fatalf("broker away: %v unreached=%v, want Retry unreached", o.Class, o.Unreached)
	}
	b.Restart()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if o := tr.Send(ctx, batchMessage("mqtt://", "r", nil)); !o.Delivered() {
		t.Fatalf("broker back: %v %v", o.Class, o.Err)
	}
}

// SendMany publishes a window of batches in flight together; the
// subscriber gets them in order, each Delivered; a message it cannot
// carry is refused in its place without holding up the others; with the
// broker away every one is Retry, unreached.
func TestTransportSendMany(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	got := newReceived()
	sub := startClient(t, mqtt.Options{URL: b.URL(), ClientID: "cloud"})
	ctx := context.Background()
	if err := sub.Subscribe(ctx, "fleet/#", got.handle); err != nil {
		t.Fatal(err)
	}
	tr := startTransport(t, mqtt.Options{URL: b.URL(), TopicPrefix: "fleet"}, "plant-a", "gw-7")
	const n = 40
	var ms []*transport.Message
	for i := range n {
		ms = append(ms, batchMessage("mqtt://", "synapse.telemetry", []byte{0x94, byte(i)}))
	}
	ms[7] = batchMessage("mqtt://10.1.1.1:1883", "r", nil)
	outs := tr.SendMany(ctx, ms)
	if len(outs) != n {
		t.Fatalf("%d outcomes for %d messages", len(outs), n)
	}
	for i, o := range outs {
		if i == 7 {
			if o.Class != transport.Permanent {
				t.Errorf("message 7 (another broker): %v, want Permanent", o.Class)
			}
			continue
		}
		if !o.Delivered() {
			t.Errorf("message %d: %v %v", i, o.Class, o.Err)
		}
	}
	for i := range n {
		if i == 7 {
			continue
		}
		topic, payload := got.next(t)
		if topic != "fleet/plant-a/gw-7/tier1/synapse.telemetry" || payload != string([]byte{0x94, byte(i)}) {
			t.Fatalf("arrival for message %d: %q %q", i, topic, payload)
		}
	}

	b.Stop()
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	for i, o := range tr.SendMany(short, ms[:3]) {
		if o.Class != transport.Retry || !o.Unreached {
			t.Errorf("broker away, message %d: %v unreached=%v, want Retry unreached", i, o.Class, o.Unreached)
		}
	}
}

// Before Start SendMany waits like Send: a batch is never refused for
// want of the agent's identity (it would be dropped from the queue).
func TestTransportSendManyBeforeStart(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	tr, err := mqtt.NewTransport(mqtt.Options{URL: b.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	for i, o := range tr.SendMany(ctx, []*transport.Message{batchMessage("mqtt://", "r", nil), batchMessage("mqtt://", "r", nil)}) {
		if o.Class != transport.Retry || !o.Unreached {
			t.Errorf("before Start, message %d: %v unreached=%v %v, want Retry unreached", i, o.Class, o.Unreached, o.Err)
		}
	}
}
