package wire

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
var legal = map[Status][]Status{
	StatusIdle:          {StatusPending},
	StatusPending:       {StatusConfirmed, StatusRejected, StatusInfoNeeded, StatusNeedHuman, StatusFailed, StatusCancelled},
	StatusConfirmed:     {StatusExecuting, StatusInfoNeeded, StatusNeedHuman, StatusFailed, StatusCancelled},
	StatusExecuting:     {StatusCompleted, StatusFailed, StatusCancelled, StatusInfoNeeded, StatusNeedHuman},
	StatusInfoNeeded:    {StatusInfoProvided, StatusFailed, StatusCancelled},
	StatusInfoProvided:  {StatusConfirmed, StatusExecuting, StatusInfoNeeded, StatusNeedHuman, StatusFailed, StatusCancelled},
	StatusNeedHuman:     {StatusHumanDeciding, StatusHumanApproved, StatusHumanRejected, StatusFailed, StatusCancelled},
	StatusHumanDeciding: {StatusHumanApproved, StatusHumanRejected, StatusNeedHuman, StatusFailed, StatusCancelled},
	StatusHumanApproved: {StatusConfirmed, StatusExecuting, StatusFailed, StatusCancelled},
	StatusHumanRejected: {StatusRejected, StatusFailed, StatusCancelled},
}

// CanTransition reports whether a task may go from one state to another
// (the state machine of seed 004 §3.2, above).
func CanTransition(from, to Status) bool {
	for _, s := range legal[from] {
		if s == to {
			return true
		}
	}
	return false
}
