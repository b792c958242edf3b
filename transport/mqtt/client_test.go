package mqtt_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/transport/mqtt"
	"github.com/synapse-edge/synapse/transport/mqtt/mqtttest"
)

// received collects what a subscription got.
type received struct {
	ch chan [2]string
}

func newReceived() *received { return &received{ch: make(chan [2]string, 1000)} }

func (r *received) handle(topic string, payload []byte) { r.ch <- [2]string{topic, string(payload)} }

func (r *received) next(t *testing.T) (topic, payload string) {
	t.Helper()
	select {
	case m := <-r.ch:
		return m[0], m[1]
	case <-time.After(10 * time.Second):
		t.Fatal("no message within 10 s")
	}
	return "", ""
}

func startClient(t *testing.T, o mqtt.Options) *mqtt.Client {
	t.Helper()
	c, err := mqtt.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitUp(ctx); err != nil {
		t.Fatalf("client %s not connected: %v", o.ClientID, err)
	}
	return c
}

func TestClientPublishSubscribe(t *testing.T) {
	cases := []struct {
		name string
		opts mqtttest.Options
	}{
		{"plain", mqtttest.Options{}},
		{"tls and password", mqtttest.Options{TLS: true, Users: map[string]string{"gw": "s3cret"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := mqtttest.Start(t, tc.opts)
			o := mqtt.Options{URL: b.URL(), CAFile: b.Certs.CA, CertFile: b.Certs.ClientCert, KeyFile: b.Certs.ClientKey}
			if tc.opts.Users != nil {
				o.Username, o.Password = "gw", "s3cret"
			}
			sub, pub := o, o
			sub.ClientID, pub.ClientID = "sub-"+tc.name, "pub-"+tc.name
			got := newReceived()
			s := startClient(t, sub)
			ctx := context.Background()
			if err := s.Subscribe(ctx, "synapse/t/#", got.handle); err != nil {
				t.Fatal(err)
			}
			p := startClient(t, pub)
			payload := []byte{0x93, 0xa1, 'x', 0x00, 0xff}
			if err := p.Publish(ctx, "synapse/t/a", payload, false); err != nil {
				t.Fatal(err)
			}
			topic, data := got.next(t)
			if topic != "synapse/t/a" || !bytes.Equal([]byte(data), payload) {
				t.Fatalf("got %q %x, want synapse/t/a %x", topic, data, payload)
			}
		})
	}
}

// TestClientRefusedSubscription: a filter the broker refuses (SUBACK
// 0x80, here by a NATS user's permissions; mosquitto grants an MQTT 3.1.1
// subscription its ACL denies and delivers nothing) is an error of
// Subscribe, not a subscription that silently never delivers; an allowed
// one works.
func TestClientRefusedSubscription(t *testing.T) {
	b := mqtttest.StartCluster(t, mqtttest.ClusterOptions{Nodes: 1, DenySubscribe: []string{"closed.>"}})
	c := startClient(t, mqtt.Options{URL: b.Nodes[0].URL(), ClientID: "sub", Username: mqtttest.ClusterUser, Password: mqtttest.ClusterPassword})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitUp(ctx); err != nil {
		t.Fatal(err)
	}
	err := c.Subscribe(ctx, "closed/+", func(string, []byte) {})
	if err == nil || !strings.Contains(err.Error(), "0x80") {
		t.Fatalf("Subscribe to a filter the ACL refuses: %v, want the broker's refusal", err)
	}
	got := newReceived()
	if err := c.Subscribe(ctx, "open/+", got.handle); err != nil {
		t.Fatalf("Subscribe to an allowed filter: %v", err)
	}
	if err := c.Publish(ctx, "open/1", []byte("x"), false); err != nil {
		t.Fatal(err)
	}
	if _, m := got.next(t); m != "x" {
		t.Fatalf("got %q", m)
	}
}

func TestClientRefusedCredentials(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{Users: map[string]string{"gw": "right"}})
	c, err := mqtt.New(mqtt.Options{URL: b.URL(), ClientID: "wrong", Username: "gw", Password: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	if err := c.WaitUp(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("connected with a wrong password: %v", err)
	}
}

// A subscriber's persistent session survives its own restart; after the
// broker restarts (no persistence) the client reconnects and subscribes
// again by itself.
func TestClientReconnectsAndResubscribes(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	got := newReceived()
	s := startClient(t, mqtt.Options{URL: b.URL(), ClientID: "sub", MaxReconnectInterval: 500 * time.Millisecond})
	ctx := context.Background()
	if err := s.Subscribe(ctx, "synapse/r/+", got.handle); err != nil {
		t.Fatal(err)
	}
	p := startClient(t, mqtt.Options{URL: b.URL(), ClientID: "pub", MaxReconnectInterval: 500 * time.Millisecond})
	if err := p.Publish(ctx, "synapse/r/1", []byte("one"), false); err != nil {
		t.Fatal(err)
	}
	if _, m := got.next(t); m != "one" {
		t.Fatalf("got %q", m)
	}
	b.Restart()
	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	// Publish until the resubscribed subscriber hears one: the publisher
	// may be back before the subscriber.
	for i := 2; ; i++ {
		if err := p.Publish(pctx, "synapse/r/1", fmt.Appendf(nil, "m%d", i), false); err != nil {
			t.Fatalf("publish after restart: %v\n%s", err, b.Log())
		}
		select {
		case m := <-got.ch:
			if m[1] == "one" {
				// QoS 1 is at least once: "one", taken but not yet
				// acknowledged when the broker died, is delivered again.
				continue
			}
			if !strings.HasPrefix(m[1], "m") {
				t.Fatalf("got %q", m[1])
			}
			if s.Connects.Load() < 2 || p.Connects.Load() < 2 {
				t.Fatalf("connects: sub %d pub %d, want 2 each", s.Connects.Load(), p.Connects.Load())
			}
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    mqtt.Options
		want string
	}{
		{"http url", mqtt.Options{URL: "http://127.0.0.1:1883", ClientID: "a"}, "url"},
		{"no host", mqtt.Options{URL: "mqtt://", ClientID: "a"}, "url"},
		{"path", mqtt.Options{URL: "mqtt://h:1/x", ClientID: "a"}, "url"},
		{"user in url", mqtt.Options{URL: "mqtt://u:p@h:1", ClientID: "a"}, "url"},
		{"no client id", mqtt.Options{URL: "mqtt://h"}, "client_id"},
		{"cert without key", mqtt.Options{URL: "mqtts://h", ClientID: "a", CertFile: "c"}, "key_file"},
		{"wildcard prefix", mqtt.Options{URL: "mqtt://h", ClientID: "a", TopicPrefix: "a/+/b"}, "topic_prefix"},
		{"leading slash", mqtt.Options{URL: "mqtt://h", ClientID: "a", TopicPrefix: "/a"}, "topic_prefix"},
		{"hash prefix", mqtt.Options{URL: "mqtt://h", ClientID: "a", TopicPrefix: "#"}, "topic_prefix"},
		{"bad second broker", mqtt.Options{URL: "mqtt://h", URLs: []string{"mqtt://h2", "tcp://h3"}, ClientID: "a"}, "url"},
		{"tls and plain brokers", mqtt.Options{URL: "mqtts://h", URLs: []string{"mqtt://h2"}, ClientID: "a"}, "scheme"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error naming %s", err, tc.want)
			}
		})
	}
	for _, ok := range []mqtt.Options{
		{URL: "mqtts://broker.example:8883", ClientID: "gw", TopicPrefix: "plant/a"},
		{URL: "mqtts://b1.example", URLs: []string{"mqtts://b2.example:8883", "mqtts://[::1]:8883"}, ClientID: "gw"},
	} {
		if err := ok.Validate(); err != nil {
			t.Fatal(err)
		}
	}
}
