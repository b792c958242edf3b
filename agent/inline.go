package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/wire"
)

// The sync mode (POST /task?wait=S) of an idempotent handler runs the
// handler at once, before the task is stored. When it finishes within
// inlineBudget, the task is stored once with its whole history (pending,
// confirmed, executing and its final state, each with its own time) in one
// transaction, and the answer is sent after that commit: one fsync per round
// trip instead of two. Nothing is acknowledged before it is durable, and no
// one can have heard of the task before then, since its id is not known
// outside this request yet. A crash before the commit loses an
// unacknowledged request whose handler is idempotent: running it again on
// the client's retry is harmless. A handler that takes longer is stored as
// executing after inlineBudget and then goes on as any other task.
const inlineBudget = 20 * time.Millisecond

// inlineBuf holds a handler's progress and log events until its task is
// stored.
type inlineBuf struct {
	mu     sync.Mutex
	active bool
	evs    []inlineEvent
}

type inlineEvent struct {
	at       time.Time
	progress int // -1 for a log line
	text     string
	chunk    *wire.StreamChunk // a stream chunk instead of progress or text
}

// record keeps an event while the task is not stored; false when it is.
func (b *inlineBuf) record(at time.Time, progress int, text string) bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.active {
		return false
	}
	b.evs = append(b.evs, inlineEvent{at: at, progress: progress, text: text})
	return true
}

// recordChunk is record for a stream chunk.
func (b *inlineBuf) recordChunk(at time.Time, c wire.StreamChunk) bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.active {
		return false
	}
	b.evs = append(b.evs, inlineEvent{at: at, progress: -1, chunk: &c})
	return true
}

// flush turns the kept events into task events and stops keeping.
func (e *engine) flush(b *inlineBuf, t *wire.Task) []*wire.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.active = false
	var evs []*wire.Event
	for _, ie := range b.evs {
		if ie.chunk != nil {
			evs = append(evs, e.newEvent(t, wire.EventLog, ie.at, ie.chunk))
			continue
		}
		if ie.progress < 0 {
			evs = append(evs, e.newEvent(t, wire.EventLog, ie.at, &wire.LogEventData{TaskID: t.ID, Line: ie.text}))
			continue
		}
		t.Progress = ie.progress
		evs = append(evs, e.newEvent(t, wire.EventProgress, ie.at, &wire.ProgressEventData{TaskID: t.ID, Progress: ie.progress, Message: ie.text}))
	}
	b.evs = nil
	return evs
}

type handlerOut struct {
	res any
	err error
}

// submitWait is the sync mode: it returns the task once final, or after
// wait.
func (e *engine) submitWait(ctx context.Context, p auth.Principal, req *wire.SubmitRequest, idem *idemWrite, wait time.Duration) (*wire.Task, error) {
	if err := e.check(ctx, req); err != nil {
		return nil, err
	}
	h := e.a.handlers.get(req.TaskType)
	if req.Target != "" || h == nil || !h.Idempotent {
		return e.submitThenWait(ctx, p, req, idem, wait)
	}
	missing, err := h.schema.Validate(req.Payload)
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 || e.approvalFor(req) != nil {
		return e.submitThenWait(ctx, p, req, idem, wait)
	}
	if err := e.admit(); err != nil {
		return nil, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		e.acquireUndo()
		return nil, fmt.Errorf("task id: %w", err)
	}
	now := e.a.clock.Now()
	t := &wire.Task{
		ID: id.String(), Type: req.TaskType, Status: wire.StatusIdle, Payload: req.Payload,
		TTLSeconds: req.TTLSeconds, Priority: req.Priority, Owner: p.ID, CallbackURL: req.CallbackURL,
		CreatedAt: now, UpdatedAt: now, StartedAt: now,
	}
	evs := e.admitted(t, now)
	buf := &inlineBuf{active: true}
	r := &run{h: h, slot: true, done: make(chan struct{}), task: t}
	if h.Immediate {
		res, err := callHandler(e.base, h.Func, &Run{id: t.ID, taskType: t.Type, payload: json.RawMessage(t.Payload), e: e, inline: buf})
		return e.storeFinished(ctx, r, buf, evs, idem, e.base, handlerOut{res, err})
	}
	r.mu.Lock()
	hctx := e.arm(r)
	r.mu.Unlock()
	outc := make(chan handlerOut, 1)
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		res, err := callHandler(hctx, h.Func, &Run{id: t.ID, taskType: t.Type, payload: json.RawMessage(t.Payload), e: e, inline: buf})
		outc <- handlerOut{res, err}
	}()

	budget := time.NewTimer(inlineBudget)
	defer budget.Stop()
	select {
	case out := <-outc:
		return e.storeFinished(ctx, r, buf, evs, idem, hctx, out)
	case <-budget.C:
	case <-ctx.Done():
	}
	// Slow: store it as executing; it then goes on as any task.
	r.mu.Lock()
	evs = append(evs, e.flush(buf, t)...)
	done := make(chan error, 1)
	e.db.UpdateAsync(e.withPush(ctx, t, e.createFn(t, evs, nil, idem)), func(err error) { done <- err })
	e.mu.Lock()
	e.runs[t.ID] = r
	e.mu.Unlock()
	e.added.fire()
	r.mu.Unlock()
	if err := storeErr(<-done); err != nil {
		r.cancel(errShutdown) // never stored: nothing to record
		<-outc
		e.release(r)
		e.untrack(r)
		return nil, err
	}
	e.a.m.submitted.Inc()
	e.hub.Publish(t.ID, evs)
	e.humanChange("", t)
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		out := <-outc
		e.complete(hctx, r, out.res, out.err)
	}()
	return e.wait(ctx, t.ID, max(wait-inlineBudget, 0))
}

// storeFinished stores a task whose handler finished within the budget, in
// its final state, in one transaction.
func (e *engine) storeFinished(ctx context.Context, r *run, buf *inlineBuf, evs []*wire.Event, idem *idemWrite, hctx context.Context, out handlerOut) (*wire.Task, error) {
	t := r.task
	defer func() {
		r.mu.Lock()
		if r.timer != nil {
			r.timer.Stop()
		}
		r.mu.Unlock()
		if r.cancel != nil {
			r.cancel(context.Canceled)
		}
		e.release(r)
	}()
	to, res, fail, shutdown := e.outcome(hctx, t, out.res, out.err)
	if shutdown {
		return nil, wire.Errorf(wire.CodeAgentNotReady, "the agent is shutting down")
	}
	evs = append(evs, e.flush(buf, t)...)
	more, err := e.final(t, to, res, fail, e.a.clock.Now())
	if err != nil {
		return nil, err
	}
	evs = append(evs, more...)
	// Created final: the network queues its callback (Network.Changed).
	if err := e.create(ctx, t, evs, nil, idem); err != nil {
		return nil, err
	}
	e.a.m.submitted.Inc()
	e.a.m.finished.With(string(to)).Add(1)
	e.hub.Publish(t.ID, evs)
	return t, nil
}

// admitted moves a new task of the sync mode from idle through pending
// and confirmed to executing, as three transitions would, with one
// allocation for the events, one for their data and room for the final
// state's events.
func (e *engine) admitted(t *wire.Task, now time.Time) []*wire.Event {
	steps := [3]wire.Transition{{Status: wire.StatusPending, Reason: "submitted"}, {Status: wire.StatusConfirmed, Reason: "accepted"}, {Status: wire.StatusExecuting}}
	t.History = make([]wire.Transition, 0, len(steps))
	slab, evs := make([]wire.Event, len(steps)), make([]*wire.Event, 0, len(steps)+3)
	data := make([]byte, 0, 3*(96+len(t.ID))+len("submittedaccepted"))
	for i, s := range steps {
		s.From, s.At = t.Status, wire.Time{Time: now}
		t.History, t.Status, t.UpdatedAt = append(t.History, s), s.Status, now
		start := len(data)
		data = wire.AppendStatusEventJSON(data, &wire.StatusEventData{From: s.From, Message: s.Reason, Progress: t.Progress, Status: s.Status, TaskID: t.ID})
		evs = append(evs, e.eventInto(&slab[i], t, wire.EventStatus, now, data[start:len(data):len(data)]))
	}
	return evs
}

// submitThenWait is the sync mode of everything but the inline case.
func (e *engine) submitThenWait(ctx context.Context, p auth.Principal, req *wire.SubmitRequest, idem *idemWrite, wait time.Duration) (*wire.Task, error) {
	t, err := e.submit(ctx, p, req, idem)
	if err != nil {
		return nil, err
	}
	return e.wait(ctx, t.ID, wait)
}

// acquireUndo gives back a slot taken by admit.
func (e *engine) acquireUndo() {
	e.mu.Lock()
	e.active--
	e.a.m.active.Set(float64(e.active))
	e.slotFreed()
	e.mu.Unlock()
}
