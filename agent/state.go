package agent

import (
	"fmt"

	"github.com/synapse-edge/synapse/wire"
)

// legal lists the transitions of seed 004 §3.2. The diagram draws the
// requester's view; the executor's side adds the detours it can take from
// any live state (need info, need a person, fail, be cancelled).
var legal = map[wire.Status][]wire.Status{
	wire.StatusIdle:          {wire.StatusPending},
	wire.StatusPending:       {wire.StatusConfirmed, wire.StatusRejected, wire.StatusInfoNeeded, wire.StatusNeedHuman, wire.StatusFailed, wire.StatusCancelled},
	wire.StatusConfirmed:     {wire.StatusExecuting, wire.StatusInfoNeeded, wire.StatusNeedHuman, wire.StatusFailed, wire.StatusCancelled},
	wire.StatusExecuting:     {wire.StatusCompleted, wire.StatusFailed, wire.StatusCancelled, wire.StatusInfoNeeded, wire.StatusNeedHuman},
	wire.StatusInfoNeeded:    {wire.StatusInfoProvided, wire.StatusFailed, wire.StatusCancelled},
	wire.StatusInfoProvided:  {wire.StatusConfirmed, wire.StatusExecuting, wire.StatusInfoNeeded, wire.StatusNeedHuman, wire.StatusFailed, wire.StatusCancelled},
	wire.StatusNeedHuman:     {wire.StatusHumanDeciding, wire.StatusHumanApproved, wire.StatusHumanRejected, wire.StatusFailed, wire.StatusCancelled},
	wire.StatusHumanDeciding: {wire.StatusHumanApproved, wire.StatusHumanRejected, wire.StatusFailed, wire.StatusCancelled},
	wire.StatusHumanApproved: {wire.StatusConfirmed, wire.StatusExecuting, wire.StatusFailed, wire.StatusCancelled},
	wire.StatusHumanRejected: {wire.StatusRejected, wire.StatusFailed, wire.StatusCancelled},
}

// CanTransition reports whether a task may go from one state to another.
func CanTransition(from, to wire.Status) bool {
	for _, s := range legal[from] {
		if s == to {
			return true
		}
	}
	return false
}

// ErrIllegalTransition is wrapped by transition errors; an illegal
// transition is a bug and is refused.
var ErrIllegalTransition = fmt.Errorf("illegal task state transition")

func checkTransition(from, to wire.Status) error {
	if !CanTransition(from, to) {
		return fmt.Errorf("%w: %s → %s", ErrIllegalTransition, from, to)
	}
	return nil
}
