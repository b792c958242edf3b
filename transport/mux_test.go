package transport_test

import (
	"context"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/transport"
)

type closer struct {
	transport.Func
	closed int
}

func (c *closer) Close() error { c.closed++; return nil }

func TestMux(t *testing.T) {
	var got []string
	named := func(name string) transport.Func {
		return func(_ context.Context, m *transport.Message) transport.Outcome {
			got = append(got, name+" "+m.To)
			return transport.Outcome{Class: transport.Delivered}
		}
	}
	mqtt := &closer{Func: named("mqtt")}
	mux := transport.NewMux()
	mux.Handle(named("http"), "http", "https")
	mux.Handle(mqtt, "mqtt", "MQTTS")
	ctx := context.Background()
	for _, to := range []string{"http://127.0.0.1:1/x", "HTTPS://peer", "mqtts://broker:8883/agents/b", "mqtt://broker"} {
		if o := mux.Send(ctx, &transport.Message{Kind: transport.Envelope, To: to}); !o.Delivered() {
			t.Errorf("%s: %v %v", to, o.Class, o.Err)
		}
	}
	want := []string{"http http://127.0.0.1:1/x", "http HTTPS://peer", "mqtt mqtts://broker:8883/agents/b", "mqtt mqtt://broker"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("sent %q, want %q", got, want)
	}

	for _, tt := range []struct{ to, says string }{
		{"ws://peer/x", `no transport for "ws"`},
		{"peer.example:8080", "no transport"},
		{"/relative", "no scheme"},
		{"http://[::1%zz/?token=s3cr3t", "destination URL"},
	} {
		o := mux.Send(ctx, &transport.Message{To: tt.to})
		if o.Class != transport.Permanent || !strings.Contains(o.Err.Error(), tt.says) {
			t.Errorf("%s: %v %v, want Permanent saying %q", tt.to, o.Class, o.Err, tt.says)
		}
		if strings.Contains(o.Err.Error(), "s3cr3t") {
			t.Errorf("%s: the error shows the URL: %v", tt.to, o.Err)
		}
	}

	if err := mux.Close(); err != nil || mqtt.closed != 1 {
		t.Errorf("Close: %v, closed %d times, want once", err, mqtt.closed)
	}
}

func TestReceiverFunc(t *testing.T) {
	var r transport.Receiver = transport.ReceiverFunc(func(_ context.Context, in *transport.Inbound) transport.Answer {
		return transport.Answer{Status: 202, Body: in.Body}
	})
	a := r.Receive(context.Background(), &transport.Inbound{Kind: transport.Envelope, Body: []byte("x")})
	if o := transport.Classify(transport.Envelope, a); !o.Delivered() || string(o.Reply) != "x" {
		t.Errorf("outcome %+v", o)
	}
}
