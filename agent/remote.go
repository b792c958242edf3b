package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/agent/idemdb"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Delegation between agents (seed 004 §4). A task submitted with a target
// is tracked here from the requester's side and never runs locally; a task
// a peer asks for runs here with an Origin. Every state change reaches the
// network (Network.Changed) in the same store transaction as the change,
// and the network queues the p2p:* message the peer must hear of there, so
// a crash can lose neither.

// Outgoing is a message the engine sends explicitly with a state change
// (for the peer executing a delegated task: a cancel, information, a
// decision), queued in the transaction of the change (Network.Enqueue). What a change announces by
// itself (a delegated task's request and acknowledgements, the reports to
// the peer that asked for a task, the webhook callback of a final task)
// the network derives from the change (Network.Changed).
type Outgoing struct {
	Peer          string
	URL           string
	Type          wire.MessageType
	CorrelationID string
	Payload       any
	// TaskType is the task's type for a result sent to its requester
	// (the network's selective disclosure).
	TaskType string
}

// walk moves t to the state to, through the intermediate states a peer's
// report may have skipped (pending → confirmed → executing → ...).
func (e *engine) walk(t *wire.Task, to wire.Status, now time.Time, reason string) ([]*wire.Event, error) {
	if t.Status == to {
		return nil, nil
	}
	var evs []*wire.Event
	for _, via := range []wire.Status{wire.StatusConfirmed, wire.StatusExecuting} {
		if CanTransition(t.Status, to) {
			break
		}
		if CanTransition(t.Status, via) {
			more, err := e.transition(t, via, now, "reported by the executing agent")
			if err != nil {
				return nil, err
			}
			evs = append(evs, more...)
		}
	}
	more, err := e.transition(t, to, now, reason)
	return append(evs, more...), err
}

// submitRemote stores a task to be run by a peer and queues its request.
func (e *engine) submitRemote(ctx context.Context, p auth.Principal, req *wire.SubmitRequest, idem *idemWrite) (*wire.Task, error) {
	if e.a.net == nil || !e.a.net.Known(req.Target) {
		return nil, wire.Errorf(wire.CodeInvalidParams, "target %q is not a paired peer (POST /agents to pair it)", req.Target).With("field", "target")
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("task id: %w", err)
	}
	now := e.a.clock.Now()
	t := &wire.Task{
		ID: id.String(), Type: req.TaskType, Status: wire.StatusIdle, Payload: req.Payload,
		TTLSeconds: req.TTLSeconds, Priority: req.Priority, Owner: p.ID, Target: req.Target,
		CreatedAt: now, UpdatedAt: now, Deadline: e.delegationDeadline(now, req.TTLSeconds),
	}
	evs, _ := e.transition(t, wire.StatusPending, now, "sent to "+req.Target)
	if why := e.a.net.Refusal(req.Target); why != "" {
		evs = append(evs, noteWaiting(e, t, req.Target, why, now)...)
	}
	r := &run{task: t, done: make(chan struct{})}
	// The request leaves as soon as the task commits, before the task is
	// live here: the executor's first reports can come back in between.
	// They wait until it is (remoteUpdate settles), as a peer's messages
	// about a task it asked for wait for that task's creation.
	defer e.creatingRun(t.ID)()
	if err := e.create(ctx, t, evs, nil, idem); err != nil {
		// Of unknown outcome and in the file after all, its request is
		// in the outbox: live, it takes the peer's reports (issue #28).
		e.adopt(r, err)
		return nil, err
	}
	e.a.m.submitted.Inc()
	e.hub.Publish(t.ID, evs)
	if h := afterDelegate.Load(); h != nil {
		(*h)(t.ID)
	}
	e.track(r)
	return t, nil
}

// afterDelegate, when set (by tests), runs between the commit of a
// delegated task, which sends its request, and the task becoming live.
var afterDelegate atomic.Pointer[func(taskID string)]

// creatingRun marks id as being created (settle waits for it) until the
// returned function is called.
func (e *engine) creatingRun(id string) (done func()) {
	created := make(chan struct{})
	e.mu.Lock()
	if e.creating == nil {
		e.creating = map[string]chan struct{}{}
	}
	e.creating[id] = created
	e.mu.Unlock()
	return func() {
		e.mu.Lock()
		delete(e.creating, id)
		e.mu.Unlock()
		close(created)
	}
}

// acceptRemote handles a peer's p2p:task_request: the task is stored with
// its origin and answered (confirm, reject or need info) in the same
// transaction. A request for a task id already here is a duplicate and has
// no second effect.
func (e *engine) acceptRemote(ctx context.Context, peer, messageID string, req *wire.TaskRequestPayload) error {
	id := req.Task.ID
	if id == "" || len(id) > 64 || req.Task.Type == "" {
		return wire.Errorf(wire.CodeMessageFormatInvalid, "task.id and task.type are required (task.id at most 64 bytes)")
	}
	e.mu.Lock()
	if ch := e.creating[id]; ch != nil {
		e.mu.Unlock()
		<-ch // another request for the same task: no second effect
		if _, err := e.get(id); err != nil {
			return wire.Errorf(wire.CodeAgentNotReady, "another request for task %s was not accepted: send this one again", id)
		}
		return nil
	}
	if e.creating == nil {
		e.creating = map[string]chan struct{}{}
	}
	created := make(chan struct{})
	e.creating[id] = created
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.creating, id)
		e.mu.Unlock()
		close(created)
	}()
	if e.live(id) != nil {
		return nil
	}
	if _, err := e.get(id); err == nil {
		return nil
	}
	now := e.a.clock.Now()
	payload := req.Task.Payload
	if len(payload) == 0 {
		payload = wire.JSONValue("{}")
	}
	t := &wire.Task{ID: id, Type: req.Task.Type, Status: wire.StatusIdle, Payload: payload, Priority: req.Task.Priority,
		Owner: "peer:" + peer, Origin: &wire.TaskOrigin{Peer: peer, MessageID: messageID}, CreatedAt: now, UpdatedAt: now,
		Deadline: requestDeadline(req.Task.Deadline)}
	evs, _ := e.transition(t, wire.StatusPending, now, "requested by "+peer)
	r := &run{done: make(chan struct{})}
	reject := func(we *wire.Error) {
		t.ErrorCode, t.ErrorMessage, t.Recoverable = we.Code, we.Message, we.Class() == wire.Retriable
		more, _ := e.transition(t, wire.StatusRejected, now, we.Message)
		evs = append(evs, more...)
	}
	r.h = e.a.handlers.get(t.Type)
	var missing []wire.MissingField
	var verr error
	if !t.Deadline.IsZero() && !now.Before(t.Deadline) {
		fe := deadlineError(t.Deadline)
		t.ErrorCode, t.ErrorMessage = fe.Code, "the request arrived after its deadline "+wire.FormatTime(t.Deadline)
		more, _ := e.transition(t, wire.StatusFailed, now, t.ErrorMessage)
		evs = append(evs, more...)
	} else if r.h == nil {
		reject(wire.Errorf(wire.CodeCapabilityLacking, "this agent has no handler for task type %q", t.Type))
	} else if we := e.personalDataRefusal(peer, r.h); we != nil {
		reject(we)
	} else if !t.Payload.IsObject() {
		reject(wire.Errorf(wire.CodeInvalidParams, "payload must be a JSON object"))
	} else if missing, verr = r.h.schema.Validate(t.Payload); verr != nil {
		reject(wire.AsError(verr))
	} else if len(missing) > 0 {
		if err := e.reserveParked(r); err != nil {
			return err // the message is refused, the task not created: sent again
		}
		t.MissingFields = missing
		more, _ := e.transition(t, wire.StatusInfoNeeded, now, "payload is missing required fields")
		evs = append(evs, more...)
	} else if busy, err := e.admitRemote(ctx, req); err != nil {
		return err // the message is refused, the task not created: sent again
	} else if busy != nil {
		reject(busy)
	} else {
		r.slot = true
		more, _ := e.transition(t, wire.StatusConfirmed, now, "accepted")
		evs = append(evs, more...)
	}
	r.task = t
	var after func(error) // a slow inline run's (runInline)
	if r.slot && r.h.Idempotent && r.h.slowUntil.Load() < now.UnixNano() {
		var err error
		if evs, after, err = e.runInline(ctx, r, evs); err != nil {
			return err // its slot released
		}
	}
	err := storeErr(e.db.UpdateQueued(ctx, alsoWrite(ctx, e.createFn(t, evs, nil, nil)), func() { queued(ctx) }))
	if after != nil {
		after(err)
	}
	if err != nil {
		e.release(r)
		e.unreserveParked(r)
		return err
	}
	e.a.m.submitted.Inc()
	e.hub.Publish(t.ID, evs)
	e.humanChange("", t)
	if t.Status.Terminal() {
		e.a.m.finished.With(string(t.Status)).Add(1)
		return nil
	}
	if after == nil {
		e.track(r)
	}
	return nil
}

// Peer requests over max_concurrent_tasks (seed 000 §2.2): a request
// that finds every execution slot taken is rejected at once, the task
// stored rejected with rate_limited (numeric code 4004, retriable) and a
// p2p:task_reject whose alternatives.retry_after is BusyRetryAfterSeconds,
// so that the peer can go elsewhere or come back. A peer that would
// rather wait asks for it in the request, with context.metadata
// {"queue_when_busy": true}: its request then waits up to
// remoteAdmitWait for a slot (holding the sender's turn), and is refused
// as a message after that (503 TP-SYS001, retriable: the sender's outbox
// sends it again), so the queue is bounded by the sender's own retries.
// This agent's own requests ask for it.

// BusyRetryAfterSeconds is the retry hint of a request rejected over
// max_concurrent_tasks.
const BusyRetryAfterSeconds = 1

// QueueWhenBusy is the context.metadata key of a task_request whose
// sender asks to wait for a slot rather than be rejected.
const QueueWhenBusy = "queue_when_busy"

// admitRemote takes an execution slot for a peer's request: busy is the
// rejection when there is none and the peer did not ask to wait.
func (e *engine) admitRemote(ctx context.Context, req *wire.TaskRequestPayload) (busy *wire.Error, err error) {
	err = e.acquire(false)
	if err == nil {
		return nil, nil
	}
	if we := wire.AsError(err); we.Code != wire.CodeRateLimited {
		return nil, err
	}
	if req.Context != nil && req.Context.Metadata[QueueWhenBusy] == true {
		return nil, e.acquireWait(ctx)
	}
	return wire.Errorf(wire.CodeRateLimited, "every execution slot is taken (max_concurrent_tasks is %d): try again in %d s or ask another agent",
		e.a.cfg.Load().MaxConcurrentTasks, BusyRetryAfterSeconds).With("max_concurrent_tasks", e.a.cfg.Load().MaxConcurrentTasks).
		With("retry_after", BusyRetryAfterSeconds), nil
}

// remoteInline is how long the handler of a peer's request may run
// before the request is stored (runInline).
const remoteInline = 2 * time.Millisecond

// runInline runs the idempotent handler of a peer's request r, its task
// confirmed and not stored yet, for at most remoteInline, holding the
// sender's turn. When the handler ends in time, the task gets executing
// and its final state, and is stored once with them: one commit, and the
// peer hears of confirm, executing and the outcome together. Otherwise it
// is stored executing with the handler's events so far, and goes on as
// any task (its type is then not run inline for slowFor): after, then,
// must be called with the store's outcome. Nothing is acknowledged before the
// commit; a crash before it loses the unacknowledged request, which the
// peer sends again, and running an idempotent handler again is harmless
// (inline.go, the same for the sync mode).
func (e *engine) runInline(ctx context.Context, r *run, evs []*wire.Event) (_ []*wire.Event, after func(error), _ error) {
	t, buf, outc, hctx := r.task, &inlineBuf{active: true}, make(chan handlerOut, 1), e.base
	call := func() {
		res, err := callHandler(hctx, r.h.Func, &Run{id: t.ID, taskType: t.Type, payload: json.RawMessage(t.Payload), e: e, inline: buf})
		outc <- handlerOut{res, err}
	}
	if r.h.Immediate { // returns at once (echo): on this goroutine
		call()
	} else {
		r.mu.Lock()
		hctx = e.arm(r)
		r.mu.Unlock()
		e.wg.Add(1)
		go func() { defer e.wg.Done(); call() }()
	}
	t.StartedAt = e.a.clock.Now()
	more, _ := e.transition(t, wire.StatusExecuting, t.StartedAt, "")
	evs = append(evs, more...)
	budget := time.NewTimer(remoteInline)
	defer budget.Stop()
	select {
	case out := <-outc:
		to, res, fail, shutdown := e.outcome(hctx, t, out.res, out.err)
		if r.cancel != nil {
			r.timer.Stop()
			r.cancel(context.Canceled)
		}
		e.release(r) // done with its slot
		if shutdown {
			return nil, nil, wire.Errorf(wire.CodeAgentNotReady, "the agent is shutting down")
		}
		evs = append(evs, e.flush(buf, t)...)
		more, err := e.final(t, to, res, fail, e.a.clock.Now())
		return append(evs, more...), nil, err
	case <-budget.C:
	case <-ctx.Done():
	}
	r.h.slowUntil.Store(e.a.clock.Now().Add(slowFor).UnixNano())
	// Live before the commit, as the sync mode's slow run; r.mu is held
	// until the commit so that the handler's next writes follow it.
	r.mu.Lock()
	evs = append(evs, e.flush(buf, t)...)
	e.mu.Lock()
	e.runs[t.ID] = r
	e.mu.Unlock()
	e.added.fire()
	return evs, func(err error) {
		r.mu.Unlock()
		if err != nil {
			if r.cancel != nil {
				r.cancel(errShutdown) // never stored: nothing to record
			}
			<-outc
			e.release(r)
			e.untrack(r)
			return
		}
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			out := <-outc
			e.complete(hctx, r, out.res, out.err)
		}()
	}, nil
}

// slowFor is how long a task type whose handler outlasted remoteInline is
// not run inline for peers' requests.
const slowFor = 10 * time.Second

// create stores a new task, its events, its outgoing messages and an
// idempotency record in one transaction.
func (e *engine) create(ctx context.Context, t *wire.Task, evs []*wire.Event, out []Outgoing, idem *idemWrite) error {
	return storeErr(e.db.Update(ctx, e.withPush(ctx, t, e.createFn(t, evs, out, idem))))
}

// createFn is the write of create.
func (e *engine) createFn(t *wire.Task, evs []*wire.Event, out []Outgoing, idem *idemWrite) func(*store.Tx) error {
	rec, encErr := store.EncodeTask(t, evs) // outside the store's writer
	var idemRaw []byte
	if idem != nil && encErr == nil {
		idemRaw, encErr = idem.record(t) // so is the idempotency record
	}
	return func(tx *store.Tx) error {
		if encErr != nil {
			return encErr
		}
		if idem != nil && idemdb.Has(tx, idem.scope, idem.key) {
			return errIdemRace
		}
		if err := tx.CreateRecord(rec); err != nil {
			return err
		}
		if err := e.changed(tx, nil, t); err != nil {
			return err
		}
		if err := e.enqueue(tx, out); err != nil {
			return err
		}
		if idem != nil {
			return idemdb.Put(tx, idem.scope, idem.key, t.CreatedAt, idemRaw)
		}
		return nil
	}
}

// personalDataRefusal is the network's refusal of a request from peer for
// h's task type when it is marked personal_data; nil when it may run.
func (e *engine) personalDataRefusal(peer string, h *registered) *wire.Error {
	if h == nil || !h.PersonalData {
		return nil
	}
	if e.a.net == nil {
		return wire.Errorf(wire.CodeAgentNotReady, "no peer network")
	}
	return e.a.net.PersonalDataRefusal(peer, h.Type.Type)
}

// storeErr maps a failed task write to the client-visible error.
func storeErr(err error) error {
	if err == nil || errors.Is(err, errIdemRace) {
		return err
	}
	if errors.Is(err, store.ErrOutcomeUnknown) {
		// Both wrapped: the answer is the wire error, adopt reads the cause.
		return fmt.Errorf("%w (%w)", wire.Errorf(wire.CodeCommitUnknown, "the disk failed while storing the task, which may or may not be stored (%v): retry with the same Idempotency-Key, which finds the task if it was stored", err), err)
	}
	return wire.Errorf(wire.CodeSysStorage, "could not store the task: %v", err)
}

// changed tells the network, inside tx, of the change of a task from prev
// (nil: the task is being created) to next.
func (e *engine) changed(tx *store.Tx, prev, next *wire.Task) error {
	if e.a.net == nil {
		return nil
	}
	return e.a.net.Changed(tx, prev, next)
}

func (e *engine) enqueue(tx *store.Tx, out []Outgoing) error {
	if len(out) == 0 {
		return nil
	}
	if e.a.net == nil {
		return fmt.Errorf("no peer network to send %s to %s", out[0].Type, out[0].Peer+out[0].URL)
	}
	for _, m := range out {
		if err := e.a.net.Enqueue(tx, m); err != nil {
			return err
		}
	}
	return nil
}

// remoteUpdate applies a report from the peer executing one of our tasks.
func (e *engine) remoteUpdate(ctx context.Context, peer string, msgType wire.MessageType, payload wire.RawPayload) error {
	rep, err := wire.DecodeReport(msgType, payload)
	if err != nil || rep == nil {
		return err // nil: an acknowledgement that reports nothing
	}
	taskID, to, fail := rep.TaskID, rep.Status, rep.Fail
	var mut func(t *wire.Task)
	switch msgType {
	case wire.MsgTaskStatusUpdate:
		mut = func(t *wire.Task) { t.Progress = rep.Progress }
	case wire.MsgTaskNeedInfo:
		mut = func(t *wire.Task) { t.MissingFields = rep.MissingFields }
	case wire.MsgTaskNeedHuman:
		mut = func(t *wire.Task) { t.Human = rep.Human }
	}
	e.settle(taskID) // a report can overtake the task becoming live (submitRemote)
	r := e.live(taskID)
	if r == nil {
		t, err := e.get(taskID)
		if err != nil || t.Target != peer {
			return wire.Errorf(wire.CodeTaskNotFound, "no task %q delegated to %s", taskID, peer)
		}
		if to == t.Status {
			return nil // the outcome repeated: it took effect once
		}
		// Finished here (its outcome came, or its deadline passed): a
		// report of anything else is refused, as REST refuses it.
		return wire.Errorf(wire.CodeTaskAlreadyCompleted, "task %s is already %s; %s cannot change it", t.ID, t.Status, msgType).
			With("task_id", t.ID).With("status", t.Status)
	}
	if cur := r.snapshot(); cur.Target != peer {
		return wire.Errorf(wire.CodePermissionDenied, "task %q was not delegated to %s", taskID, peer)
	}
	if !to.Valid() {
		return wire.Errorf(wire.CodeMessageFormatInvalid, "unknown status %q", to)
	}
	if to.Terminal() {
		if fail != nil && fail.Code == "" {
			fail.Code = wire.CodeExecutionFailed
		}
		return e.finishRemote(ctx, r, msgType, to, rep.Result, fail)
	}
	return e.applyCtx(ctx, r, func(t *wire.Task, now time.Time) ([]*wire.Event, error) {
		if t.Status.Terminal() {
			return nil, nil
		}
		if mut != nil {
			mut(t)
		}
		from := t.Status
		evs, err := e.walk(t, to, now, "reported by "+peer)
		if err != nil {
			t.Status = from // for the refusal: nothing is stored
			return nil, illegalReport(t, to, msgType)
		}
		if len(evs) == 0 && mut != nil {
			t.UpdatedAt = now
			evs = append(evs, e.newEvent(t, wire.EventProgress, now, map[string]any{"task_id": t.ID, "progress": t.Progress}))
		}
		return evs, nil
	})
}

// finishRemote ends a delegated task on the peer's word. When the write
// fails the report is refused (retriable) and the task stays live, so
// the peer's outbox sends it again; it is never acknowledged unstored.
func (e *engine) finishRemote(ctx context.Context, r *run, msgType wire.MessageType, to wire.Status, result wire.JSONValue, fail *wire.Error) error {
	var illegal *wire.Error
	err := e.applyCtx(ctx, r, func(t *wire.Task, now time.Time) ([]*wire.Event, error) {
		if t.Status.Terminal() {
			return nil, nil
		}
		t.Result = result.Stored()
		if to == wire.StatusCompleted {
			t.Progress = 100
		}
		if fail != nil {
			t.ErrorCode, t.ErrorMessage, t.Recoverable = fail.Code, fail.Message, fail.Retriable
		}
		t.MissingFields, t.Human, t.CancelRequested = nil, nil, false
		from := t.Status
		evs, err := e.walk(t, to, now, "reported by "+t.Target)
		if err != nil {
			t.Status = from
			illegal = illegalReport(t, to, msgType)
			return nil, illegal
		}
		return evs, nil
	})
	if illegal != nil {
		return illegal // nothing changed: the task goes on
	}
	if err != nil {
		e.log.Error("finish delegated task", "task_id", r.snapshot().ID, "err", err)
		if !r.snapshot().Status.Terminal() { // resync read the file: not stored
			return storeErr(err)
		}
	}
	e.a.m.finished.With(string(to)).Add(1)
	e.untrack(r)
	return nil
}

// cancelRemote asks the executing peer to cancel; the task becomes
// cancelled when the peer confirms.
func (e *engine) cancelRemote(r *run) error {
	return e.applyOut(r, true, func(t *wire.Task, now time.Time) ([]*wire.Event, []Outgoing, error) {
		if t.Status.Terminal() || t.CancelRequested {
			return nil, nil, nil
		}
		t.CancelRequested, t.UpdatedAt = true, now
		ev := e.newEvent(t, wire.EventLog, now, &wire.LogEventData{TaskID: t.ID, Line: "cancel sent to " + t.Target})
		return []*wire.Event{ev}, []Outgoing{{Peer: t.Target, Type: wire.MsgTaskCancel,
			Payload: &wire.TaskCancelPayload{TaskID: t.ID, Reason: "cancelled by the requester"}}}, nil
	})
}

// provideInfoRemote forwards missing fields to the executing peer.
func (e *engine) provideInfoRemote(r *run, fields wire.JSONValue) error {
	return e.applyOut(r, true, func(t *wire.Task, now time.Time) ([]*wire.Event, []Outgoing, error) {
		if t.Status != wire.StatusInfoNeeded {
			return nil, nil, wire.Errorf(wire.CodeInvalidStateChange, "task %s is %s, not info_needed", t.ID, t.Status)
		}
		evs, err := e.transition(t, wire.StatusInfoProvided, now, "information sent to "+t.Target)
		if err != nil {
			return nil, nil, err
		}
		t.MissingFields = nil
		return evs, []Outgoing{{Peer: t.Target, Type: wire.MsgTaskInfoProvided,
			Payload: &wire.TaskInfoProvidedPayload{TaskID: t.ID, Fields: fields}}}, nil
	})
}

// illegalReport refuses a peer's report that the state machine (seed 004
// §3.2, wire/transitions.go) does not allow from t's state.
func illegalReport(t *wire.Task, to wire.Status, msgType wire.MessageType) *wire.Error {
	return wire.Errorf(wire.CodeInvalidStateChange, "task %s is %s: %s (%s) is not allowed from there", t.ID, t.Status, msgType, to).
		With("task_id", t.ID).With("status", t.Status).With("reported", to)
}

// remoteCancel handles a peer's p2p:task_cancel for a task it asked for,
// as POST /task/{id}/cancel does: a cancelled task is answered as is, a task in
// another final state is refused (409 task_already_completed).
func (e *engine) remoteCancel(ctx context.Context, peer string, p *wire.TaskCancelPayload) error {
	if _, err := e.requested(peer, p.TaskID); err != nil {
		return err
	}
	_, err := e.cancel(ctx, p.TaskID)
	return err
}

// remoteInfo handles a peer's p2p:task_info_provided as POST
// /task/{id}/info does: a task that is not in info_needed refuses it (409
// invalid_state_transition).
func (e *engine) remoteInfo(ctx context.Context, peer string, p *wire.TaskInfoProvidedPayload) error {
	if _, err := e.requested(peer, p.TaskID); err != nil {
		return err
	}
	_, err := e.provideInfo(ctx, p.TaskID, p.Fields)
	return err
}

// requested reads task id, which peer must have asked for, once its
// creation is settled.
func (e *engine) requested(peer, id string) (*wire.Task, error) {
	e.settle(id)
	t, err := e.get(id)
	if err == nil && (t.Origin == nil || t.Origin.Peer != peer) {
		err = wire.Errorf(wire.CodePermissionDenied, "task %q was not requested by %s", id, peer)
	}
	return t, err
}
