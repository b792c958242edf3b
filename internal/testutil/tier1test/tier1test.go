// Package tier1test gives an agent under test tier 1 as synapse serve
// gives it (package tier1's Service in agent.Options.Tier1): the built-in
// routine and those of the section, batch ids remembered as long as
// idempotency keys, the agent's clock.
package tier1test

import (
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/tier1"
)

// Service returns tier 1 of the section tier1.DefaultConfig() changed by
// mutate, for an agent built with opts (its Clock, if set, is tier 1's);
// a section that does not check fails the test.
func Service(t testing.TB, opts agent.Options, mutate ...func(*tier1.Config)) *tier1.Service {
	t.Helper()
	c := tier1.DefaultConfig()
	for _, m := range mutate {
		m(&c)
	}
	var bad []string
	c.Check(func(field, format string, args ...any) { bad = append(bad, field) })
	if len(bad) > 0 {
		t.Fatalf("tier1test: bad tier1 fields %v", bad)
	}
	so := tier1.ServiceOptions{SeenFor: agent.IdempotencyTTL}
	if opts.Clock != nil {
		so.Now = opts.Clock.Now
	}
	s, err := tier1.NewService(c, so)
	if err != nil {
		t.Fatalf("tier1test: %v", err)
	}
	return s
}

// Options returns opts with Tier1 set to Service(t, opts, mutate...),
// unless it is set already, and that service.
func Options(t testing.TB, opts agent.Options, mutate ...func(*tier1.Config)) (agent.Options, *tier1.Service) {
	t.Helper()
	if s, ok := opts.Tier1.(*tier1.Service); ok && s != nil {
		return opts, s
	}
	s := Service(t, opts, mutate...)
	opts.Tier1 = s
	return opts, s
}
