package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/internal/testutil/wiretest"
	"github.com/synapse-edge/synapse/transport"
)

func TestTransportWires(t *testing.T) {
	var got []string
	wire := transport.Func(func(_ context.Context, m *transport.Message) transport.Outcome {
		got = append(got, m.To)
		return transport.Outcome{Class: transport.Delivered}
	})
	t.Run("default: no wire but those added by scheme", func(t *testing.T) {
		a, err := agent.New(testConfig(t), agent.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.AddWire(wire, "mqtt", "mqtts"); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if o := a.Transport().Send(ctx, &transport.Message{Kind: transport.Envelope, To: "mqtts://broker:8883"}); !o.Delivered() {
			t.Errorf("mqtts: %v %v", o.Class, o.Err)
		}
		if len(got) != 1 || got[0] != "mqtts://broker:8883" {
			t.Errorf("the wire got %q", got)
		}
		// An agent built without wires sends nothing over the network,
		// and says so.
		o := a.Transport().Send(ctx, &transport.Message{Kind: transport.Fetch, To: "http://127.0.0.1:1/x"})
		if o.Class != transport.Permanent || o.Err == nil || !strings.Contains(o.Err.Error(), `no transport for "http" destinations`) {
			t.Errorf("http with no wire: %v (%v)", o.Class, o.Err)
		}
		if o := a.Transport().Send(ctx, &transport.Message{Kind: transport.Envelope, To: "ws://x"}); o.Class != transport.Permanent {
			t.Errorf("unknown scheme: %v", o.Class)
		}
	})
	t.Run("the command's wires", func(t *testing.T) {
		cfg := testConfig(t)
		a, err := agent.New(cfg, wiretest.Options(t, cfg, agent.Options{}))
		if err != nil {
			t.Fatal(err)
		}
		if err := a.AddWire(wire, "mqtt"); err != nil {
			t.Fatal(err)
		}
		// http is the HTTP wire's: a refused connection, not the mqtt wire.
		if o := a.Transport().Send(context.Background(), &transport.Message{Kind: transport.Fetch, To: "http://127.0.0.1:1/x"}); o.Class != transport.Retry || !o.Unreached {
			t.Errorf("http to a closed port: %v unreached %v (%v)", o.Class, o.Unreached, o.Err)
		}
	})
	t.Run("Options.Transport", func(t *testing.T) {
		a, err := agent.New(testConfig(t), agent.Options{Transport: wire})
		if err != nil {
			t.Fatal(err)
		}
		if a.Transport() == nil {
			t.Fatal("no transport")
		}
		if err := a.AddWire(wire, "mqtt"); err == nil {
			t.Error("AddWire on a transport that is not a Mux: no error")
		}
	})
}
