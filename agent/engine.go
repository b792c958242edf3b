package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/agent/eventhub"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Causes of a handler's context ending, told apart when the task finishes.
var (
	errCancelled   = errors.New("task cancelled")
	errMaxDuration = errors.New("task exceeded max_task_duration_seconds")
	errTTL         = errors.New("task exceeded its ttl_seconds")
	errDeadline    = errors.New("task passed its deadline")
	errShutdown    = errors.New("agent shutting down")
)

// engine runs tasks. Finished tasks live only in the store; the engine keeps
// in memory just the tasks that are not final yet.
type engine struct {
	a   *Agent
	db  *store.DB
	log *slog.Logger
	hub eventhub.Hub
	// human wakes package hil at changes into or out of need_human and
	// human_deciding (human_queue.go).
	human signal
	// added fires when a run is added to runs (a sync-mode task that
	// goes on after its inline budget becomes live then).
	added signal
	// pushes indexes the live tasks with A2A push configs.
	pushes pushIndex
	// failedWrites counts the task writes that failed (follows).
	failedWrites atomic.Uint64

	mu   sync.Mutex
	runs map[string]*run
	// creating holds the ids of tasks a peer asked for whose creation is
	// queued but not committed (their channel is closed when it is), and
	// of delegated tasks until they are live: a later message about the
	// task waits for it (p2p_order.go, submitRemote).
	creating map[string]chan struct{}
	// freed, when not nil, is closed when an execution slot is given back
	// (peers' requests wait for one: acquireWait).
	freed   chan struct{}
	active  int
	closing bool
	// stopping is closed when shutdown begins: a handler waiting for a
	// person stops at once (its task stays in need_human on disk).
	stopping chan struct{}
	// parkedN counts the runs waiting in info_needed or need_human
	// without a slot (parked.go).
	parkedN atomic.Int64
	wg      sync.WaitGroup

	base       context.Context
	cancelBase context.CancelCauseFunc
}

// run is the in-memory state of one live task.
type run struct {
	mu     sync.Mutex
	task   *wire.Task // latest state; replaced, never mutated in place
	h      *registered
	slot   bool
	cancel context.CancelCauseFunc
	timer  Timer
	done   chan struct{}
	// decision receives a person's decision while the handler waits in
	// AskHuman.
	decision chan *wire.HumanDecisionPayload
	// fold is the kept start of a run whose executing state is written
	// with its final one (engine_fold.go); nil otherwise.
	fold *fold
	// preDecided is a decision made after a restart, returned by the next
	// AskHuman of the re-run handler.
	preDecided *wire.HumanDecisionPayload
	// unsaved is set when the final state could not be persisted; readers
	// then go to the store rather than trust the in-memory state.
	unsaved bool
	// light is set when task is a copy without the payload of the state
	// the store holds (a parked task, parked.go); parked when the run is
	// counted in engine.parkedN.
	light, parked bool
}

func (r *run) snapshot() *wire.Task {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.task
}

func newEngine(a *Agent) *engine {
	base, cancel := context.WithCancelCause(context.Background())
	return &engine{a: a, db: a.db, log: a.log.With("component", "engine"),
		runs: map[string]*run{}, base: base, cancelBase: cancel, stopping: make(chan struct{})}
}

// ---- transitions ----

func (e *engine) newEvent(t *wire.Task, typ wire.EventType, now time.Time, data any) *wire.Event {
	b, err := wire.EventDataJSON(data)
	if err != nil {
		b = []byte(`{}`)
	}
	return e.eventInto(new(wire.Event), t, typ, now, b)
}

// eventInto fills ev as t's next event, with its data encoded.
func (e *engine) eventInto(ev *wire.Event, t *wire.Task, typ wire.EventType, now time.Time, data []byte) *wire.Event {
	t.Seq++
	*ev = wire.Event{TaskID: t.ID, Seq: t.Seq, Type: typ, At: wire.Time{Time: now}, Data: data}
	return ev
}

// transition moves t to a new state and returns its events; a final state
// also gets an error event (for failures) and the complete event.
func (e *engine) transition(t *wire.Task, to wire.Status, now time.Time, reason string) ([]*wire.Event, error) {
	if err := checkTransition(t.Status, to); err != nil {
		return nil, err
	}
	from := t.Status
	t.History = append(t.History[:len(t.History):len(t.History)], wire.Transition{From: from, Status: to, At: wire.Time{Time: now}, Reason: reason})
	t.Status = to
	t.UpdatedAt = now
	n := 1
	if to.Terminal() {
		n = 2
		if t.ErrorCode != "" {
			n = 3
		}
	}
	// One allocation for the events and one for their pointers.
	slab := make([]wire.Event, n)
	evs := make([]*wire.Event, 0, n)
	evs = append(evs, e.eventInto(&slab[0], t, wire.EventStatus, now,
		wire.StatusEventJSON(&wire.StatusEventData{From: from, Message: reason, Progress: t.Progress, Status: to, TaskID: t.ID})))
	if to.Terminal() {
		if t.ErrorCode != "" {
			evs = append(evs, e.eventInto(&slab[1], t, wire.EventError, now, wire.ErrorEventJSON(&wire.ErrorEventData{
				Code: t.ErrorCode, Message: t.ErrorMessage, NumericCode: wire.NumericCode(t.ErrorCode), Recoverable: t.Recoverable, TaskID: t.ID,
			})))
		}
		// The complete event carries the task as it is once this event is
		// counted: the same etag as GET /task/{id} then.
		final := t.StatusResponse(true)
		final.ETag = `"` + t.ID + "-" + strconv.FormatUint(t.Seq+1, 10) + `"`
		data, err := wire.AppendStatusJSON(nil, final, true)
		if err != nil {
			data = []byte(`{}`)
		}
		evs = append(evs, e.eventInto(&slab[n-1], t, wire.EventComplete, now, data))
	}
	return evs, nil
}

// apply mutates the run's task, persists the new state with its events and
// publishes the events once they are durable. With wait it returns after the
// commit; otherwise the write is queued (in order) and apply returns at once.
// The network hears of the change (Network.Changed) in the same
// transaction, and the messages the change sends explicitly are queued in
// it.
func (e *engine) apply(r *run, wait bool, mut func(t *wire.Task, now time.Time) ([]*wire.Event, error)) error {
	return e.applyOut(r, wait, func(t *wire.Task, now time.Time) ([]*wire.Event, []Outgoing, error) {
		evs, err := mut(t, now)
		return evs, nil, err
	})
}

// applyOut is apply for changes that also send explicit messages.
func (e *engine) applyOut(r *run, wait bool, mut func(t *wire.Task, now time.Time) ([]*wire.Event, []Outgoing, error)) error {
	return e.applyOutCtx(context.Background(), r, wait, mut)
}

// applyCtx is apply for a peer's message: the message's sequencer (ctx)
// hears when the write is queued.
func (e *engine) applyCtx(ctx context.Context, r *run, mut func(t *wire.Task, now time.Time) ([]*wire.Event, error)) error {
	return e.applyOutCtx(ctx, r, true, func(t *wire.Task, now time.Time) ([]*wire.Event, []Outgoing, error) {
		evs, err := mut(t, now)
		return evs, nil, err
	})
}

func (e *engine) applyOutCtx(ctx context.Context, r *run, wait bool, mut func(t *wire.Task, now time.Time) ([]*wire.Event, []Outgoing, error)) error {
	r.mu.Lock()
	wasLight := r.light
	if err := e.heavy(r); err != nil {
		r.mu.Unlock()
		return err
	}
	prev := r.task
	next := *prev
	evs, out, err := mut(&next, e.a.clock.Now())
	if err != nil || (len(evs) == 0 && len(out) == 0 && next.Seq == prev.Seq) {
		if wasLight {
			e.makeLight(r) // nothing written: the store still holds prev
		}
		r.mu.Unlock()
		return err
	}
	snap := &next
	r.task = snap
	e.countParked(r)
	var done chan error
	if wait {
		done = make(chan error, 1)
	}
	// Encoded here, not in the store's single writer, which then only
	// copies bytes.
	rec, encErr := store.EncodeTask(snap, evs)
	failed := e.failedWrites.Load()
	e.db.UpdateAsync(alsoWrite(ctx, func(tx *store.Tx) error {
		if encErr != nil {
			return encErr
		}
		if err := e.follows(tx, failed, prev); err != nil {
			return err
		}
		if err := tx.PutRecord(rec); err != nil {
			return err
		}
		if err := e.changed(tx, prev, snap); err != nil {
			return err
		}
		if err := e.enqueue(tx, out); err != nil {
			return err
		}
		return e.pushOut(tx, prev, snap)
	}), func(err error) {
		if err == nil {
			e.hub.Publish(snap.ID, evs)
			e.humanChange(prev.Status, snap)
			if !snap.Status.Terminal() && (waiting(snap.Status) || snap.Target != "") {
				go e.lighten(r, snap) // not from the writer: r.mu may be held by a sender
			}
		} else {
			e.failedWrites.Add(1)
			e.log.Error("persist task state", "task_id", snap.ID, "status", snap.Status, "err", err)
			if done == nil {
				go e.resync(r, snap) // not from the writer: r.mu may be held
			}
		}
		if done != nil {
			done <- err
		}
	})
	r.mu.Unlock()
	queued(ctx)
	if done != nil {
		err := <-done
		if err != nil {
			e.resync(r, snap)
		}
		return err
	}
	return nil
}

// settle waits while the task id is being created for a peer.
func (e *engine) settle(id string) {
	e.mu.Lock()
	ch := e.creating[id]
	e.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// ---- admission ----

func (e *engine) acquire(force bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closing {
		return wire.Errorf(wire.CodeAgentNotReady, "the agent is shutting down")
	}
	if limit := e.a.cfg.Load().MaxConcurrentTasks; !force && e.active >= limit {
		return wire.Errorf(wire.CodeRateLimited, "too many concurrent tasks (max_concurrent_tasks is %d)", limit).
			With("max_concurrent_tasks", limit)
	}
	e.active++
	e.a.m.active.Set(float64(e.active))
	return nil
}

func (e *engine) release(r *run) {
	r.mu.Lock()
	had := r.slot
	r.slot = false
	r.mu.Unlock()
	if !had {
		return
	}
	e.mu.Lock()
	e.active--
	e.a.m.active.Set(float64(e.active))
	e.slotFreed()
	e.mu.Unlock()
}

// slotFreed wakes the requests waiting for a slot; e.mu is held.
func (e *engine) slotFreed() {
	if e.freed != nil {
		close(e.freed)
		e.freed = nil
	}
}

// remoteAdmitWait bounds how long a peer's task request waits for an
// execution slot.
const remoteAdmitWait = 5 * time.Second

// acquireWait takes an execution slot for a peer's task request, waiting
// up to remoteAdmitWait for one: while it waits, the peer's later messages
// wait behind it (back-pressure on the peer's window). When none frees up
// the message — not the task — is refused as overloaded (TP-SYS001, 503,
// retriable): the peer's outbox sends it again later.
func (e *engine) acquireWait(ctx context.Context) error {
	timer := time.NewTimer(remoteAdmitWait)
	defer timer.Stop()
	for { // each wait ends with a freed slot
		e.mu.Lock()
		if e.closing {
			e.mu.Unlock()
			return wire.Errorf(wire.CodeAgentNotReady, "the agent is shutting down")
		}
		if e.active < e.a.cfg.Load().MaxConcurrentTasks {
			e.active++
			e.a.m.active.Set(float64(e.active))
			e.mu.Unlock()
			return nil
		}
		if e.freed == nil {
			e.freed = make(chan struct{})
		}
		ch := e.freed
		e.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			return wire.Errorf(wire.CodeSysOverloaded, "every execution slot is taken (max_concurrent_tasks is %d): send the request again later", e.a.cfg.Load().MaxConcurrentTasks)
		case <-ctx.Done():
			return wire.Errorf(wire.CodeSysOverloaded, "no execution slot: %v", ctx.Err())
		}
	}
}

// ---- submit ----

// submitWith is submit, or submitWait when wait is above zero.
func (e *engine) submitWith(ctx context.Context, p auth.Principal, req *wire.SubmitRequest, idem *idemWrite, wait time.Duration) (*wire.Task, error) {
	if wait > 0 {
		return e.submitWait(ctx, p, req, idem, wait)
	}
	return e.submit(ctx, p, req, idem)
}

func (e *engine) submit(ctx context.Context, p auth.Principal, req *wire.SubmitRequest, idem *idemWrite) (*wire.Task, error) {
	if err := e.check(ctx, req); err != nil {
		return nil, err
	}
	if req.Target != "" {
		return e.submitRemote(ctx, p, req, idem)
	}
	h, missing, err := e.handlerFor(req)
	if err != nil {
		return nil, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("task id: %w", err)
	}
	now := e.a.clock.Now()
	t := &wire.Task{
		ID: id.String(), Type: req.TaskType, Status: wire.StatusIdle, Payload: req.Payload,
		TTLSeconds: req.TTLSeconds, Priority: req.Priority, Owner: p.ID, CallbackURL: req.CallbackURL,
		CreatedAt: now, UpdatedAt: now,
	}
	evs, _ := e.transition(t, wire.StatusPending, now, "submitted")
	r := &run{h: h, done: make(chan struct{})}
	if len(missing) > 0 || e.approvalFor(req) != nil {
		if err := e.reserveParked(r); err != nil {
			return nil, err
		}
	}
	if len(missing) > 0 {
		t.MissingFields = missing
		more, err := e.transition(t, wire.StatusInfoNeeded, now, "payload is missing required fields")
		if err != nil {
			e.unreserveParked(r)
			return nil, err
		}
		evs = append(evs, more...)
	} else if rule := e.approvalFor(req); rule != nil {
		t.Human = approvalRequest(t, rule)
		more, err := e.transition(t, wire.StatusNeedHuman, now, t.Human.Reason.Message)
		if err != nil {
			e.unreserveParked(r)
			return nil, err
		}
		evs = append(evs, more...)
	} else {
		if err := e.admit(); err != nil {
			return nil, err
		}
		r.slot = true
		more, _ := e.transition(t, wire.StatusConfirmed, now, "accepted")
		evs = append(evs, more...)
	}
	r.task = t
	if err := e.create(ctx, t, evs, nil, idem); err != nil {
		if e.adopt(r, err) {
			return nil, err // told "unknown"; the stored task runs once
		}
		e.release(r)
		e.unreserveParked(r)
		return nil, err
	}
	e.a.m.submitted.Inc()
	e.hub.Publish(t.ID, evs)
	e.humanChange("", t)
	e.track(r)
	return t, nil
}

// check validates a submission's fields.
func (e *engine) check(ctx context.Context, req *wire.SubmitRequest) error {
	e.mu.Lock()
	closing := e.closing
	e.mu.Unlock()
	if closing {
		return wire.Errorf(wire.CodeAgentNotReady, "the agent is shutting down")
	}
	if err := req.Normalize(); err != nil {
		return err
	}
	if ctx.Value(pushCtxKey{}) != nil {
		if err := e.a.needNetwork("a push config"); err != nil {
			return err
		}
	}
	if req.CallbackURL == "" {
		return nil
	}
	if err := e.a.needNetwork("callback_url"); err != nil {
		return err
	}
	return e.a.outbound.CheckURL(ctx, "callback_url", req.CallbackURL)
}

// handlerFor finds the handler of a local task and validates its payload.
func (e *engine) handlerFor(req *wire.SubmitRequest) (*registered, []wire.MissingField, error) {
	h := e.a.handlers.get(req.TaskType)
	if h == nil {
		return nil, nil, e.errNoHandler(req.TaskType) // suggest.go
	}
	missing, err := h.schema.Validate(req.Payload)
	return h, missing, err
}

// admit takes an execution slot, counting refusals.
func (e *engine) admit() error {
	err := e.acquire(false)
	if we := (*wire.Error)(nil); errors.As(err, &we) && we.Code == wire.CodeRateLimited {
		e.a.m.rejected.Inc()
	}
	return err
}

// errIdemRace is returned when another request stored the same idempotency
// key between the caller's check and the write.
var errIdemRace = errors.New("idempotency key stored concurrently")

// track registers a live task and starts or parks it according to its state.
func (e *engine) track(r *run) {
	e.mu.Lock()
	e.runs[r.task.ID] = r
	e.mu.Unlock()
	e.added.fire()
	switch r.task.Status {
	case wire.StatusConfirmed, wire.StatusExecuting:
		e.start(r)
	default:
		e.park(r)
	}
}

// park arms the TTL timer of a task that waits for someone (info, a person).
// (and the deadline of a delegated task, deadline.go).
func (e *engine) park(r *run) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.countParked(r)
	e.makeLight(r) // its state is durable: created, recovered or applied
	at, ok := parkUntil(r.task)
	if !ok {
		return
	}
	r.timer = e.a.clock.AfterFunc(max(at.Sub(e.a.clock.Now()), 0), func() { e.expire(r) })
}

func (e *engine) expire(r *run) {
	t := r.snapshot()
	if e.pastDeadline(r, t) {
		return
	}
	if t.Status.Terminal() || t.Status == wire.StatusExecuting || t.Status == wire.StatusConfirmed || t.Target != "" || t.TTLSeconds <= 0 {
		return
	}
	if e.a.clock.Now().Before(t.CreatedAt.Add(time.Duration(t.TTLSeconds) * time.Second)) {
		return // woken for a deadline that did not apply
	}
	e.finish(r, wire.StatusFailed, nil, wire.Errorf(wire.CodeTaskExpired, "ttl of %d s passed while the task waited in %s", t.TTLSeconds, t.Status))
}

// ---- execution ----

func (e *engine) start(r *run) {
	r.mu.Lock()
	ctx := e.arm(r)
	r.mu.Unlock()
	e.wg.Add(1)
	go e.execute(ctx, r)
}

// arm makes the handler context of r, cancelled at the task's deadline
// (max_task_duration_seconds or its TTL, whichever is first). r.mu is held.
func (e *engine) arm(r *run) context.Context {
	ctx, cancel := context.WithCancelCause(e.base)
	r.cancel = cancel
	t := r.task
	now := e.a.clock.Now()
	deadline, cause := now.Add(e.a.cfg.Load().TaskDuration()), errMaxDuration
	if t.TTLSeconds > 0 {
		if ttl := t.CreatedAt.Add(time.Duration(t.TTLSeconds) * time.Second); ttl.Before(deadline) {
			deadline, cause = ttl, errTTL
		}
	}
	if !t.Deadline.IsZero() && t.Deadline.Before(deadline) {
		deadline, cause = t.Deadline, errDeadline
	}
	r.timer = e.a.clock.AfterFunc(max(deadline.Sub(now), 0), func() { cancel(cause) })
	return ctx
}

func (e *engine) execute(ctx context.Context, r *run) {
	defer e.wg.Done()
	if e.foldable(r) {
		e.executeFolded(ctx, r) // engine_fold.go
		return
	}
	if r.snapshot().Status != wire.StatusExecuting {
		err := e.apply(r, false, func(t *wire.Task, now time.Time) ([]*wire.Event, error) {
			t.StartedAt = now
			return e.transition(t, wire.StatusExecuting, now, "")
		})
		if err != nil {
			e.log.Error("start task", "task_id", r.snapshot().ID, "err", err)
		}
	}
	t := r.snapshot()
	result, err := callHandler(ctx, r.h.Func, &Run{id: t.ID, taskType: t.Type, payload: json.RawMessage(t.Payload), e: e})
	e.complete(ctx, r, result, err)
}

// complete records what a handler returned.
func (e *engine) complete(ctx context.Context, r *run, result any, err error) {
	to, res, fail, shutdown := e.outcome(ctx, r.snapshot(), result, err)
	if shutdown {
		// Left as executing: the next start fails it with agent_restarted
		// or runs it again if its handler is idempotent.
		e.release(r)
		e.untrack(r)
		return
	}
	e.finish(r, to, res, fail)
}

// outcome classifies what a handler returned: the final state, the result
// or the failure; shutdown when the agent is stopping (no final state).
func (e *engine) outcome(ctx context.Context, t *wire.Task, result any, err error) (to wire.Status, res wire.JSONValue, fail *wire.Error, shutdown bool) {
	if err == nil && ctx.Err() != nil {
		err = ctx.Err() // finished too late: the cancel or deadline wins
	}
	if err == nil {
		res, encErr := encodeResult(result)
		if encErr == nil {
			return wire.StatusCompleted, res, nil, false
		}
		err = wire.Errorf(wire.CodeExecutionFailed, "%v", encErr)
	}
	switch cause := context.Cause(ctx); {
	case ctx.Err() != nil && errors.Is(cause, errShutdown):
		return "", nil, nil, true
	case ctx.Err() != nil && errors.Is(cause, errCancelled):
		return wire.StatusCancelled, nil, nil, false
	case ctx.Err() != nil && errors.Is(cause, errDeadline):
		return wire.StatusFailed, nil, deadlineError(t.Deadline), false
	case ctx.Err() != nil && errors.Is(cause, errTTL):
		return wire.StatusFailed, nil, wire.Errorf(wire.CodeTaskExpired, "the task did not finish within its ttl of %d s", t.TTLSeconds), false
	case errors.Is(err, ErrHumanRejected):
		return wire.StatusRejected, nil, wire.Errorf(wire.CodePermissionDenied, "a person rejected the task"), false
	case ctx.Err() != nil && errors.Is(cause, errMaxDuration):
		return wire.StatusFailed, nil, wire.Errorf(wire.CodeExecutionTimeout, "the task exceeded max_task_duration_seconds (%d)", e.a.cfg.Load().MaxTaskDurationSeconds), false
	}
	we := (*wire.Error)(nil)
	if !errors.As(err, &we) {
		we = wire.Errorf(wire.CodeExecutionFailed, "%v", err)
	}
	return wire.StatusFailed, nil, we, false
}

func callHandler(ctx context.Context, f HandlerFunc, r *Run) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = wire.Errorf(wire.CodeExecutionFailed, "handler panicked: %v", p)
		}
	}()
	return f(ctx, r)
}

// finish moves a live task to a final state, durably, then forgets it.
func (e *engine) finish(r *run, to wire.Status, result wire.JSONValue, fail *wire.Error) {
	e.finishFrom(r, to, result, fail, nil)
}

// finishFrom is finish of a run whose start may still be kept in f: then
// the start is written with the final state (engine_fold.go).
func (e *engine) finishFrom(r *run, to wire.Status, result wire.JSONValue, fail *wire.Error, f *fold) {
	err := e.apply(r, true, func(t *wire.Task, now time.Time) ([]*wire.Event, error) {
		if t.Status.Terminal() {
			return nil, nil
		}
		evs, err := f.take(e, t)
		if err != nil {
			return nil, err
		}
		if t.Status == wire.StatusConfirmed && !CanTransition(t.Status, to) {
			// The commit of its start failed and the file, which memory
			// follows, says confirmed; its handler ran all the same.
			// (evs is empty: take moves a confirmed task on or keeps none.)
			t.StartedAt = now
			evs, _ = e.transition(t, wire.StatusExecuting, now, "")
		}
		more, err := e.final(t, to, result, fail, now)
		return append(evs, more...), err
	})
	if err != nil {
		e.log.Error("finish task", "task_id", r.snapshot().ID, "status", to, "err", err)
		// Only a failed commit is written again: a change the task's state
		// refuses would be refused again at once, for ever.
		if !errors.Is(err, ErrIllegalTransition) && e.retryFinal(r, to, result, fail, f) {
			return // still live; written again once the store can commit
		}
		r.mu.Lock()
		r.unsaved = true
		r.mu.Unlock()
	}
	e.a.m.finished.With(string(to)).Add(1)
	e.release(r)
	e.untrack(r)
}

// final moves t to a final state with its result or failure.
func (e *engine) final(t *wire.Task, to wire.Status, result wire.JSONValue, fail *wire.Error, now time.Time) ([]*wire.Event, error) {
	if t.Status.Terminal() {
		return nil, nil
	}
	t.Result = result.Stored()
	if to == wire.StatusCompleted {
		t.Progress = 100
	}
	if fail != nil {
		t.ErrorCode, t.ErrorMessage, t.Recoverable = fail.Code, fail.Message, fail.Class() == wire.Retriable
	}
	t.MissingFields = nil
	return e.transition(t, to, now, "")
}

func (e *engine) untrack(r *run) {
	r.mu.Lock()
	if r.timer != nil {
		r.timer.Stop()
	}
	if r.cancel != nil {
		r.cancel(context.Canceled)
	}
	if r.parked {
		r.parked = false
		e.parkedN.Add(-1)
	}
	id := r.task.ID
	r.mu.Unlock()
	e.mu.Lock()
	if e.runs[id] == r {
		delete(e.runs, id)
	}
	e.mu.Unlock()
	select {
	case <-r.done:
	default:
		close(r.done)
	}
}

func (e *engine) progress(id string, pct int, msg string) {
	r := e.live(id)
	if r == nil {
		return
	}
	_ = e.apply(r, false, func(t *wire.Task, now time.Time) ([]*wire.Event, error) {
		if t.Status != wire.StatusExecuting || (t.Progress == pct && msg == "") {
			return nil, nil
		}
		t.Progress, t.UpdatedAt = pct, now
		return []*wire.Event{e.newEvent(t, wire.EventProgress, now, &wire.ProgressEventData{TaskID: t.ID, Progress: pct, Message: msg})}, nil
	})
}

func (e *engine) logLine(id, line string) {
	r := e.live(id)
	if r == nil {
		return
	}
	if len(line) > 4096 {
		line = line[:4096]
	}
	_ = e.apply(r, false, func(t *wire.Task, now time.Time) ([]*wire.Event, error) {
		if t.Status.Terminal() {
			return nil, nil
		}
		return []*wire.Event{e.newEvent(t, wire.EventLog, now, &wire.LogEventData{TaskID: t.ID, Line: line})}, nil
	})
}

func (e *engine) chunk(id string, c wire.StreamChunk) {
	r := e.live(id)
	if r == nil {
		return
	}
	_ = e.apply(r, false, func(t *wire.Task, now time.Time) ([]*wire.Event, error) {
		if t.Status.Terminal() {
			return nil, nil
		}
		return []*wire.Event{e.newEvent(t, wire.EventLog, now, c)}, nil
	})
}

func (e *engine) live(id string) *run {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.runs[id]
}
