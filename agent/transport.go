package agent

import (
	"fmt"

	"github.com/synapse-edge/synapse/transport"
)

// Transport is what the agent sends through (Options.Transport, or the
// agent's own Mux, with the wires given to AddWire).
func (a *Agent) Transport() transport.Transport { return a.transport }

// AddWire sends messages for destinations of the given URL schemes
// ("mqtt", "mqtts", "a2a+http", ...) through t. It fails when
// Options.Transport is a transport that is not a *transport.Mux (then
// that transport is where wires are added).
func (a *Agent) AddWire(t transport.Transport, schemes ...string) error {
	mux, ok := a.transport.(*transport.Mux)
	if !ok {
		return fmt.Errorf("add wire %v: the agent's transport is a %T, not a *transport.Mux", schemes, a.transport)
	}
	mux.Handle(t, schemes...)
	return nil
}

// closeTransport closes the Mux the agent built (the wires given to
// AddWire); a transport from Options.Transport is its builder's to close.
func (a *Agent) closeTransport() {
	if a.ownTransport {
		_ = a.transport.(*transport.Mux).Close()
	}
}
