package contracts_test

import (
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/contracts"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/wire"
)

// TestAutoNegotiation: the first task for a peer negotiates a contract
// on its own; when the peer no longer holds that contract as active
// (here its clock has passed the expiry, the requester's has not), the
// requester takes the peer's TP-NEG012 as a revocation, negotiates again
// and delivers; nothing ends as a dead letter.
func TestAutoNegotiation(t *testing.T) {
	ca, cb := newFakeClock(), newFakeClock()
	a := startPeerWith(t, "requester", agent.Options{Clock: ca})
	b := startPeerWith(t, "executor", agent.Options{Clock: cb}, func(c *agent.Config) { c.Negotiation.ContractTTLSeconds = 120 })
	pair(t, a, b)
	done := func(task *wire.Task) {
		t.Helper()
		var last wire.Status
		testutil.Eventually(t, 10*time.Second, "the task to complete", func() bool {
			got, err := a.a.Task(task.ID)
			if err == nil && got.Status != last {
				t.Logf("task %s is %s", task.ID, got.Status)
				last = got.Status
			}
			return err == nil && got.Status == wire.StatusCompleted
		})
	}
	done(submitTo(t, a, b, "echo", `{"n":1}`))
	cs, _, err := a.a.Contracts().List(contracts.Query{Peer: b.id()})
	if err != nil || len(cs) != 1 || cs[0].Status != negotiate.StatusActive || cs[0].Contract.NegotiationTrace == nil {
		t.Fatalf("contracts after the first task: %+v, %v", cs, err)
	}
	first := cs[0].Contract.ContractID

	cb.Advance(121 * time.Second) // expired for the executor only
	done(submitTo(t, a, b, "echo", `{"n":2}`))
	cs, _, _ = a.a.Contracts().List(contracts.Query{Peer: b.id()})
	if len(cs) != 2 || cs[0].Contract.ContractID == first || cs[0].Status != negotiate.StatusActive {
		t.Fatalf("contracts after the refusal: %+v, want a new active one first", cs)
	}
	if cs[1].Status != negotiate.StatusRevoked || cs[1].RevokedBy != b.id() {
		t.Errorf("the refused contract is %s by %q, want revoked by the executor", cs[1].Status, cs[1].RevokedBy)
	}
	if dead := outboxOf(t, a.a, "dead"); len(dead) != 0 {
		t.Errorf("dead letters: %+v", dead)
	}
}
