package agent

import (
	"context"

	"github.com/synapse-edge/synapse/transport/outbound"
)

// The policy of URLs a client names (callback_url, A2A push URLs) is
// package outbound's; these names keep the agent's API and config as
// they were.

// OutboundConfig is the outbound section of the config (outbound.Config).
type OutboundConfig = outbound.Config

// OutboundPolicy decides whether the agent may call a client-given URL
// (outbound.Policy).
type OutboundPolicy = outbound.Policy

// ErrTargetRefused is wrapped by the errors of a refused target.
var ErrTargetRefused = outbound.ErrTargetRefused

// NewOutboundPolicy builds the policy of cfg for an agent listening on
// listen (HOST:PORT, may be empty).
func NewOutboundPolicy(cfg OutboundConfig, listen string) (*OutboundPolicy, error) {
	return outbound.New(cfg, listen)
}

// OutboundPolicy is the policy every client-given outbound URL passes
// (callback_url, A2A push notification URLs).
func (a *Agent) OutboundPolicy() *OutboundPolicy { return a.outbound }

// CheckOutboundURL checks a client-given URL (field names it in the 400)
// against the agent's outbound policy.
func (a *Agent) CheckOutboundURL(ctx context.Context, field, raw string) error {
	return a.outbound.CheckURL(ctx, field, raw)
}
