package agent

import (
	"fmt"

	"github.com/synapse-edge/synapse/wire"
)

// legal lists the transitions of seed 004 §3.2. The seed's diagram draws
// the requester's view:
//
//	idle → pending → confirmed → executing → completed | failed | cancelled
//	pending → rejected; executing ↔ info_needed ↔ info_provided;
//	info_provided → need_human ↔ human_decision (human_deciding, then
//	human_approved or human_rejected)
//
// Transitions beyond the diagram, and the flow that needs each:
//
//   - pending → info_needed, confirmed → info_needed: the executor checks
//     the payload against the handler's input_schema before it runs
//     (SPEC §5.4, seed 004 §4.2);
//   - pending|confirmed|executing|info_provided → need_human: the
//     approval policy holds a task before it runs (SPEC §9), a handler
//     asks a person while it runs (AskHuman);
//   - need_human → human_approved|human_rejected directly: kept for
//     records written before every decision passed through human_deciding
//     (human_deciding.go);
//   - human_deciding → need_human: a reviewer hands the request on to the
//     next escalation level, a second reviewer (HandOver);
//   - human_approved → confirmed|executing: the task runs (policy) or its
//     handler resumes (AskHuman); human_rejected → rejected ends it;
//   - info_needed|info_provided → failed|cancelled, need_human and the
//     human states → failed|cancelled: a deadline passes (deadline.go,
//     ttl) or the requester cancels while the task waits;
//   - pending → failed: a delegated request arrives after its deadline;
//   - confirmed → failed|cancelled: the task is refused or cancelled
//     before its handler starts;
//   - info_provided → confirmed|executing: the task runs again once the
//     missing fields are given.
var legal = map[wire.Status][]wire.Status{
	wire.StatusIdle:          {wire.StatusPending},
	wire.StatusPending:       {wire.StatusConfirmed, wire.StatusRejected, wire.StatusInfoNeeded, wire.StatusNeedHuman, wire.StatusFailed, wire.StatusCancelled},
	wire.StatusConfirmed:     {wire.StatusExecuting, wire.StatusInfoNeeded, wire.StatusNeedHuman, wire.StatusFailed, wire.StatusCancelled},
	wire.StatusExecuting:     {wire.StatusCompleted, wire.StatusFailed, wire.StatusCancelled, wire.StatusInfoNeeded, wire.StatusNeedHuman},
	wire.StatusInfoNeeded:    {wire.StatusInfoProvided, wire.StatusFailed, wire.StatusCancelled},
	wire.StatusInfoProvided:  {wire.StatusConfirmed, wire.StatusExecuting, wire.StatusInfoNeeded, wire.StatusNeedHuman, wire.StatusFailed, wire.StatusCancelled},
	wire.StatusNeedHuman:     {wire.StatusHumanDeciding, wire.StatusHumanApproved, wire.StatusHumanRejected, wire.StatusFailed, wire.StatusCancelled},
	wire.StatusHumanDeciding: {wire.StatusHumanApproved, wire.StatusHumanRejected, wire.StatusNeedHuman, wire.StatusFailed, wire.StatusCancelled},
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
