// Package netwire builds an agent's network wires in one transport.Mux:
// HTTP for http and https destinations (peers, the registry, webhooks,
// tier-1 uplinks, LLM endpoints) and WebSocket for ws and wss uplinks.
// The command builds it and gives it to the agent (agent.Options.Transport),
// as litestream's command builds its replica clients: the engine sends
// through a transport.Transport and imports no wire.
//
//	pol, err := outbound.New(cfg.Outbound, cfg.Listen)
//	wires := netwire.New(netwire.Options{RootCAs: roots, Guard: pol.DialContext})
//	defer wires.Close() // after the agent closed
//	a, err := agent.New(cfg, agent.Options{Transport: wires, Outbound: pol})
//
// More wires (MQTT, A2A) are added to the same Mux by scheme
// (agent.AddWire, or Mux.Handle).
package netwire

import (
	"context"
	"crypto/x509"
	"net"
	"time"

	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/transport/httptransport"
	"github.com/synapse-edge/synapse/transport/wstransport"
)

// IdleConnsPerHost keeps a connection for each request of the peer
// network's window to one peer (32, package peer), and a few more.
const IdleConnsPerHost = 32 + 8

// Options configure the wires.
type Options struct {
	// RootCAs, if set, are the CAs https destinations (peers, the
	// registry, the uplink) are verified against; nil: the system roots.
	RootCAs *x509.CertPool
	// Guard dials the connections to URLs a client gave (callbacks): the
	// outbound policy's DialContext (package transport/outbound), which
	// refuses private addresses. nil: the standard dialer.
	Guard func(ctx context.Context, network, addr string) (net.Conn, error)
	// Now reads the clock for Retry-After dates; nil: time.Now.
	Now func() time.Time
}

// New returns a Mux with the HTTP wire for http and https and the
// WebSocket wire for ws and wss. It sets no time limit of its own: each
// sender bounds its sends with its context (the outbox 30 s, an LLM
// completion its llm.timeout_seconds, a notification 10 s). Close it
// (idle connections) once nothing sends through it.
func New(o Options) *transport.Mux {
	mux := transport.NewMux()
	mux.Handle(httptransport.New(httptransport.Options{
		RootCAs:             o.RootCAs,
		Guard:               o.Guard,
		MaxIdleConnsPerHost: IdleConnsPerHost,
		Now:                 o.Now,
	}), "http", "https")
	mux.Handle(wstransport.New(), wstransport.Schemes...)
	return mux
}
