package agent

import (
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// Deadlines of delegated tasks (seed 004 §5.4 TaskTimeout, §6.1
// task.deadline).
//
// A task sent to a peer gets a deadline: its ttl_seconds after it was
// submitted when it has one (a task that waits for a person may need
// hours), else the network's TaskTimeout (p2p.task_timeout_seconds,
// default 300). The deadline travels in the task_request as task.deadline. The
// executor keeps the earlier of it and its own limits: when it passes,
// the handler is cancelled (or a task waiting for information or a person
// is ended) and the task fails with execution_timeout (numeric_code
// 2004), which the requester hears as task_failed. A request that arrives
// after its deadline (a peer back from days offline) fails at once. The
// requester ends the task itself, failed with execution_timeout,
// deadlineGrace after the deadline if no final report came: an executor
// that is unreachable cannot keep it waiting. SPEC §5.1's fourteen states
// have no timed_out state; failed with execution_timeout is how both
// sides say it.

// deadlineGrace is how long after the deadline the requester waits for
// the executor's own report before it ends the task itself.
const deadlineGrace = 2 * time.Second

// delegationDeadline is the deadline of a task submitted now for a peer.
func (e *engine) delegationDeadline(now time.Time, ttlSeconds int) time.Time {
	d := now.Add(e.a.net.TaskTimeout())
	if ttlSeconds > 0 {
		d = now.Add(time.Duration(ttlSeconds) * time.Second)
	}
	return d.UTC().Truncate(time.Millisecond) // as written on the wire
}

// requestDeadline reads task.deadline of a request; zero when absent or
// unreadable (the executor's own limits still apply).
func requestDeadline(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// deadlineError is the failure of a task past its deadline.
func deadlineError(d time.Time) *wire.Error {
	return wire.Errorf(wire.CodeExecutionTimeout, "the task passed its deadline %s", wire.FormatTime(d)).
		With("deadline", wire.FormatTime(d))
}

// parkUntil is when a waiting task's timer should fire: its deadline
// (plus the grace for a delegated task) or, for a local task, its ttl if
// that is earlier.
func parkUntil(t *wire.Task) (time.Time, bool) {
	var at time.Time
	if !t.Deadline.IsZero() {
		at = t.Deadline
		if t.Target != "" {
			at = at.Add(deadlineGrace)
		}
	}
	if t.Target == "" && t.TTLSeconds > 0 {
		if ttl := t.CreatedAt.Add(time.Duration(t.TTLSeconds) * time.Second); at.IsZero() || ttl.Before(at) {
			at = ttl
		}
	}
	return at, !at.IsZero()
}

// pastDeadline ends t failed with execution_timeout when its deadline has
// passed and nothing else will end it: a delegated task (after the grace),
// or an executor's task that waits (a running one is ended by its
// handler's context, arm). It reports whether it did; otherwise the timer
// is armed again for what remains.
func (e *engine) pastDeadline(r *run, t *wire.Task) bool {
	if t.Status.Terminal() || t.Deadline.IsZero() {
		return false
	}
	if t.Target == "" && (t.Status == wire.StatusExecuting || t.Status == wire.StatusConfirmed) {
		return false
	}
	due := t.Deadline
	if t.Target != "" {
		due = due.Add(deadlineGrace)
	}
	if e.a.clock.Now().Before(due) {
		return false
	}
	e.log.Info("task passed its deadline", "task_id", t.ID, "status", t.Status, "deadline", t.Deadline)
	e.finish(r, wire.StatusFailed, nil, deadlineError(t.Deadline))
	return true
}
