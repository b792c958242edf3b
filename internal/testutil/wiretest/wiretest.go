// Package wiretest gives an agent under test the network wires synapse
// serve gives it (package transport/netwire: HTTP and WebSocket), with the
// URLs a client gave dialed through the outbound policy of its
// configuration, as serve does.
package wiretest

import (
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/transport/netwire"
	"github.com/synapse-edge/synapse/transport/outbound"
)

// Options returns opts with Transport and Outbound set for cfg, unless
// opts names a Transport already. The wires are closed when the test
// ends, after the agent (whose close the test registers later).
func Options(t testing.TB, cfg agent.Config, opts agent.Options) agent.Options {
	t.Helper()
	if opts.Transport != nil {
		return opts
	}
	pol, err := outbound.New(cfg.Outbound, cfg.Listen)
	if err != nil {
		t.Fatalf("wiretest: outbound policy: %v", err)
	}
	o := netwire.Options{Guard: pol.DialContext}
	if opts.Clock != nil {
		o.Now = opts.Clock.Now
	}
	mux := netwire.New(o)
	t.Cleanup(func() { _ = mux.Close() })
	opts.Transport, opts.Outbound = mux, pol
	return opts
}
