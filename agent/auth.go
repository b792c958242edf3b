package agent

import "github.com/synapse-edge/synapse/auth"

// Tokens is the agent's token store (package auth): the API layers
// authenticate every request with it; Open loads it.
func (a *Agent) Tokens() *auth.Tokens { return &a.tokens }
