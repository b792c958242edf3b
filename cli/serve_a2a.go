package cli

import (
	"log/slog"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/transport/a2aclient"
)

// newA2AWire makes the wire of a2a_jsonrpc contracts (destinations
// a2a+http and a2a+https: package transport/a2aclient) and registers it on
// the agent's transport, before the agent opens, since the outbox may
// deliver as soon as it does. Its JSON-RPC calls go out through the agent's
// own transport (HTTP); the bearer token for each peer comes from the
// config's a2a.peers. Start it once the agent is open, close it before the
// agent closes.
func newA2AWire(a *agent.Agent, c a2aclient.Config, log *slog.Logger) (*a2aclient.Transport, error) {
	t, err := a2aclient.New(a2aclient.Options{Reporter: a, Wire: a.Transport(), Token: c.TokenFor, Logger: log})
	if err != nil {
		return nil, err
	}
	if err := a.AddWire(t, a2aclient.Schemes...); err != nil {
		return nil, err
	}
	return t, nil
}
