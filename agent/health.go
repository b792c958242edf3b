package agent

import (
	"errors"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Health (SPEC §11): GET /health and the gRPC health services say
// SERVING only while the agent can keep what it acknowledges. Serving
// reports why not: the agent is shutting down (Close has begun), or the
// store cannot commit (its last commit failed and none has succeeded
// since). It reads flags only, so probes cost nothing.

// Serving is nil while the agent serves, else an agent_not_ready error
// that says why.
func (a *Agent) Serving() error {
	if a.closing.Load() {
		return wire.Errorf(wire.CodeAgentNotReady, "the agent is shutting down").With("reason", "shutting_down")
	}
	if a.db == nil {
		return wire.Errorf(wire.CodeAgentNotReady, "the agent is not open").With("reason", "not_open")
	}
	if err := a.db.Health(); err != nil {
		if errors.Is(err, store.ErrClosed) {
			return wire.Errorf(wire.CodeAgentNotReady, "the store is closed").With("reason", "shutting_down")
		}
		return wire.Errorf(wire.CodeAgentNotReady, "the store cannot commit: %v", err).With("reason", "store_failing")
	}
	return nil
}
