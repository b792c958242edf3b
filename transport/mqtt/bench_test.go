package mqtt_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/transport/mqtt"
	"github.com/synapse-edge/synapse/transport/mqtt/mqtttest"
)

// BenchmarkTransportBatch: one tier-1 batch (1000 telemetry frames, about
// 40 KB) sent and acknowledged (PUBACK) at a time through a real
// mosquitto, as the uplink sends them.
func BenchmarkTransportBatch(b *testing.B) {
	for _, size := range []int{64, 40 << 10} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			br := mqtttest.Start(b, mqtttest.Options{})
			tr, err := mqtt.NewTransport(mqtt.Options{URL: br.URL()})
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Close(context.Background())
			if err := tr.Start(context.Background(), "s", "gw"); err != nil {
				b.Fatal(err)
			}
			m := batchMessage("mqtt://", "synapse.telemetry", make([]byte, size))
			ctx := context.Background()
			b.SetBytes(int64(size))
			b.ResetTimer()
			for b.Loop() {
				if o := tr.Send(ctx, m); !o.Delivered() {
					b.Fatal(o.Err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkEnvelopeRoundTrip: one envelope (600 bytes) to a peer's inbox
// and its answer back, through a real mosquitto, at a time (the receiver
// answers at once: this is the wire's cost, not the peer network's), with
// mosquitto's default and with set_tcp_nodelay.
func BenchmarkEnvelopeRoundTrip(b *testing.B) {
	for _, nodelay := range []bool{false, true} {
		b.Run(fmt.Sprintf("nodelay=%v", nodelay), func(b *testing.B) { benchRoundTrip(b, nodelay) })
	}
}

func benchRoundTrip(b *testing.B, nodelay bool) {
	br := mqtttest.Start(b, mqtttest.Options{TCPNoDelay: nodelay})
	opts := mqtt.Options{URL: br.URL()}
	a, err := mqtt.NewTransport(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close(context.Background())
	peer, err := mqtt.NewTransport(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer peer.Close(context.Background())
	peer.SetReceiver(transport.ReceiverFunc(func(context.Context, *transport.Inbound) transport.Answer {
		return transport.Answer{Status: 202, Body: []byte(`{"accepted":true}`), ContentType: "application/json"}
	}))
	for _, x := range []struct {
		t  *mqtt.Transport
		id string
	}{{a, "a"}, {peer, "b"}} {
		if err := x.t.Start(context.Background(), "s", x.id); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, t := range []*mqtt.Transport{a, peer} {
		if err := t.Client().WaitUp(ctx); err != nil {
			b.Fatal(err)
		}
	}
	m := &transport.Message{Kind: transport.Envelope, To: "mqtt:///b", Body: make([]byte, 600), ContentType: "application/json"}
	b.ResetTimer()
	for b.Loop() {
		if o := a.Send(context.Background(), m); !o.Delivered() {
			b.Fatal(o.Err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
