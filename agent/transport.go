package agent

import (
	"crypto/x509"
	"fmt"

	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/transport/httptransport"
	"github.com/synapse-edge/synapse/transport/wstransport"
)

// idleConnsPerHost keeps a connection for each request of the peer
// network's window to one peer (32, package peer), and a few more.
const idleConnsPerHost = 32 + 8

// Transport is what the agent sends through (Options.Transport, or the
// default).
func (a *Agent) Transport() transport.Transport { return a.transport }

// defaultTransport is the transport of an agent built without
// Options.Transport. It sets no time limit of its own: each sender bounds its
// sends with its context (the outbox 30 s, an LLM completion its
// llm.timeout_seconds, a notification 10 s).
func (a *Agent) defaultTransport(roots *x509.CertPool) transport.Transport {
	mux := transport.NewMux()
	mux.Handle(httptransport.New(httptransport.Options{
		RootCAs:             roots,
		Guard:               a.outbound.DialContext,
		MaxIdleConnsPerHost: idleConnsPerHost,
		Now:                 a.clock.Now,
	}), "http", "https")
	mux.Handle(wstransport.New(), wstransport.Schemes...) // the tier-1 uplink to ws:// endpoints
	return mux
}

// AddWire sends messages for destinations of the given URL schemes
// ("mqtt", "mqtts", "a2a+http", ...) through t, beside HTTP. It fails when
// Options.Transport replaced the agent's transport with one that is not a
// *transport.Mux (then that transport is where wires are added).
func (a *Agent) AddWire(t transport.Transport, schemes ...string) error {
	mux, ok := a.transport.(*transport.Mux)
	if !ok {
		return fmt.Errorf("add wire %v: the agent's transport is a %T, not a *transport.Mux", schemes, a.transport)
	}
	mux.Handle(t, schemes...)
	return nil
}

// closeTransport closes the transport the agent built (idle connections).
func (a *Agent) closeTransport() {
	if a.ownTransport {
		_ = a.transport.(*transport.Mux).Close()
	}
}
