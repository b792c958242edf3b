package agent

import (
	"context"
	"encoding/json"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// A task whose handler is idempotent does not store executing before its
// handler runs: when the handler finishes within inlineBudget, executing
// (with its own time) and the final state are stored in one write, one
// commit instead of two. Its submit was acknowledged once durable, as
// every submit is; what is saved is the commit of a state no one waits
// for. A crash before the final write leaves the task confirmed, and the
// restart runs it again, which is harmless for an idempotent handler (the
// same promise the sync mode's inline run relies on, inline.go). A handler
// still running after inlineBudget is stored as executing then (and its
// kept progress and log events with it), and goes on as any other task.
//
// The start is not folded for tasks whose every state is announced
// outside (A2A push configs), nor for delegated tasks, which never run
// here.

// fold is the kept start of a folded run.
type fold struct {
	buf     inlineBuf
	started time.Time
}

// foldable reports whether r's start may be folded into its final write.
func (e *engine) foldable(r *run) bool {
	r.mu.Lock()
	t := r.task
	r.mu.Unlock()
	return r.h != nil && r.h.Idempotent && t.Status == wire.StatusConfirmed && t.Target == "" && !e.pushes.has(t.ID)
}

// executeFolded runs r's handler with its start kept in memory.
func (e *engine) executeFolded(ctx context.Context, r *run) {
	f := &fold{buf: inlineBuf{active: true}, started: e.a.clock.Now()}
	r.mu.Lock()
	r.fold = f
	t := r.task
	r.mu.Unlock()
	late := time.AfterFunc(inlineBudget, func() { e.unfold(r, f) })
	result, err := callHandler(ctx, r.h.Func, &Run{id: t.ID, taskType: t.Type, payload: json.RawMessage(t.Payload), e: e, inline: &f.buf})
	late.Stop()
	to, res, fail, shutdown := e.outcome(ctx, r.snapshot(), result, err)
	if shutdown {
		// Left as it is stored (confirmed, or executing if the start was
		// stored late): the restart runs it again.
		f.buf.mu.Lock()
		f.buf.active = false
		f.buf.mu.Unlock()
		e.release(r)
		e.untrack(r)
		return
	}
	e.finishFrom(r, to, res, fail, f)
}

// unfold stores the kept start of r now, if it is still kept (the budget
// passed, or the handler asks for something that needs its state stored).
func (e *engine) unfold(r *run, f *fold) {
	if f == nil {
		return
	}
	err := e.apply(r, false, func(t *wire.Task, _ time.Time) ([]*wire.Event, error) {
		return f.take(e, t)
	})
	if err != nil {
		e.log.Error("start task", "task_id", r.snapshot().ID, "err", err)
	}
}

// unfoldLive is unfold for the live run of task id, if its start is kept.
func (e *engine) unfoldLive(id string) {
	r := e.live(id)
	if r == nil {
		return
	}
	r.mu.Lock()
	f := r.fold
	r.mu.Unlock()
	e.unfold(r, f)
}

// take moves t (the state being written, r.mu held by apply) to executing
// at the kept start time with the kept events, once: later calls, and
// calls on a nil fold, return nothing.
func (f *fold) take(e *engine, t *wire.Task) ([]*wire.Event, error) {
	if f == nil {
		return nil, nil
	}
	f.buf.mu.Lock()
	active := f.buf.active
	f.buf.mu.Unlock()
	if !active {
		return nil, nil
	}
	if t.Status != wire.StatusConfirmed {
		// Not ours to start any more (it was cancelled or failed before
		// its handler returned): drop the kept events with the fold.
		e.flush(&f.buf, t)
		return nil, nil
	}
	t.StartedAt = f.started
	evs, err := e.transition(t, wire.StatusExecuting, f.started, "")
	if err != nil {
		return nil, err
	}
	return append(evs, e.flush(&f.buf, t)...), nil
}
