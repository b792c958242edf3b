package agent

import (
	"context"
	"encoding/json"
	"errors"
	"runtime/debug"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// cancelWait bounds how long Cancel waits for a running handler to stop.
const cancelWait = 10 * time.Second

func (e *engine) get(id string) (*wire.Task, error) {
	var t *wire.Task
	err := viewSettled(e.db, func(tx *store.Tx) (err error) {
		t, err = tx.Task(id)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, wire.Errorf(wire.CodeTaskNotFound, "no task with id %q", id).With("task_id", id)
	}
	if err != nil {
		return nil, wire.Errorf(wire.CodeSysStorage, "read task: %v", err)
	}
	return t, nil
}

// wait returns the task once it is final or d has passed (or ctx is done).
func (e *engine) wait(ctx context.Context, id string, d time.Duration) (*wire.Task, error) {
	if r := e.live(id); r != nil && d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-r.done:
			// done is closed after the final state is durable; the run
			// holds that state, so there is no need to read it back.
			r.mu.Lock()
			snap, ok := r.task, !r.unsaved
			r.mu.Unlock()
			if ok && snap.Status.Terminal() {
				return snap, nil
			}
		case <-t.C:
		case <-ctx.Done():
		}
	}
	return e.get(id)
}

func (e *engine) cancel(ctx context.Context, id string) (*wire.Task, error) {
	r := e.live(id)
	if r == nil {
		t, err := e.get(id)
		if err != nil {
			return nil, err
		}
		return cancelledOrConflict(t)
	}
	r.mu.Lock()
	running := r.cancel != nil
	cancel := r.cancel
	delegated := r.task.Target != ""
	r.mu.Unlock()
	if delegated {
		if err := e.cancelRemote(r); err != nil {
			return nil, err
		}
		// Wait a little for the peer's confirmation; the task becomes
		// cancelled when it arrives, however late.
		t := time.NewTimer(cancelWait)
		defer t.Stop()
		select {
		case <-r.done:
		case <-t.C:
		case <-ctx.Done():
		}
		return e.get(id)
	}
	if running {
		cancel(errCancelled)
		t := time.NewTimer(cancelWait)
		defer t.Stop()
		select {
		case <-r.done:
		case <-t.C:
			return nil, wire.Errorf(wire.CodeAgentNotReady, "the task's handler did not stop within %s", cancelWait)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	} else {
		e.finish(r, wire.StatusCancelled, nil, nil)
	}
	t, err := e.get(id)
	if err != nil {
		return nil, err
	}
	return cancelledOrConflict(t)
}

// cancelledOrConflict makes cancel idempotent: a cancelled task is answered
// as is, any other final state is a conflict.
func cancelledOrConflict(t *wire.Task) (*wire.Task, error) {
	switch {
	case t.Status == wire.StatusCancelled:
		return t, nil
	case t.Status.Terminal():
		return nil, wire.Errorf(wire.CodeTaskAlreadyCompleted, "task %s is already %s", t.ID, t.Status).
			With("task_id", t.ID).With("status", t.Status)
	}
	return t, nil
}

// provideInfo merges fields into the payload of a task waiting in
// info_needed; when nothing is missing any more it runs.
func (e *engine) provideInfo(ctx context.Context, id string, fields wire.JSONValue) (*wire.Task, error) {
	var add map[string]json.RawMessage
	if err := json.Unmarshal(fields, &add); err != nil || add == nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "the body must be a JSON object of the missing fields")
	}
	r := e.live(id)
	if r == nil {
		t, err := e.get(id)
		if err != nil {
			return nil, err
		}
		return nil, wire.Errorf(wire.CodeInvalidStateChange, "task %s is %s, not info_needed", id, t.Status)
	}
	cur, err := e.whole(r)
	if err != nil {
		return nil, err
	}
	if cur.Target != "" {
		if err := e.provideInfoRemote(r, fields); err != nil {
			return nil, err
		}
		return e.get(id)
	}
	if cur.Status != wire.StatusInfoNeeded {
		return nil, wire.Errorf(wire.CodeInvalidStateChange, "task %s is %s, not info_needed", id, cur.Status)
	}
	var payload map[string]json.RawMessage
	if err := json.Unmarshal(cur.Payload, &payload); err != nil || payload == nil {
		payload = map[string]json.RawMessage{}
	}
	for k, v := range add {
		payload[k] = v
	}
	merged, err := json.Marshal(payload)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "merge payload: %v", err)
	}
	missing, err := r.h.schema.Validate(merged)
	if err != nil {
		return nil, err
	}
	if len(missing) == 0 {
		if err := e.acquire(false); err != nil {
			return nil, err
		}
	}
	err = e.apply(r, true, func(t *wire.Task, now time.Time) ([]*wire.Event, error) {
		t.Payload = merged
		evs, err := e.transition(t, wire.StatusInfoProvided, now, "information provided")
		if err != nil {
			return nil, err
		}
		next, reason := wire.StatusConfirmed, "accepted"
		if len(missing) > 0 {
			next, reason = wire.StatusInfoNeeded, "payload is still missing required fields"
		}
		t.MissingFields = missing
		more, err := e.transition(t, next, now, reason)
		return append(evs, more...), err
	})
	if err != nil {
		if len(missing) == 0 {
			e.mu.Lock()
			e.active--
			e.slotFreed()
			e.mu.Unlock()
		}
		return nil, err
	}
	if len(missing) == 0 {
		r.mu.Lock()
		r.slot = true
		if r.timer != nil {
			r.timer.Stop()
		}
		r.mu.Unlock()
		e.start(r)
	}
	return e.get(id)
}

func (e *engine) list(f store.TaskFilter) ([]*wire.Task, string, error) {
	var ts []*wire.Task
	var next string
	err := e.db.View(func(tx *store.Tx) (err error) {
		ts, next, err = tx.ListTasks(f)
		return err
	})
	return ts, next, err
}

func (e *engine) events(id string, after uint64) ([]*wire.Event, error) {
	var evs []*wire.Event
	err := e.db.View(func(tx *store.Tx) (err error) {
		evs, err = tx.Events(id, after, 0)
		return err
	})
	return evs, err
}

// recoverPage is how many tasks recover reads at once: their payloads are
// in memory together until the parked ones are stripped.
const recoverPage = 32

// recover takes over the tasks a previous process left unfinished (SPEC §5.5).
func (e *engine) recover(ctx context.Context) (int, error) {
	var live []*wire.Task
	after, stripped := "", 0
	for {
		var page []*wire.Task
		var next string
		err := e.db.View(func(tx *store.Tx) (err error) {
			page, next, err = tx.ListTasks(store.TaskFilter{NonTerminal: true, After: after, Limit: recoverPage})
			return err
		})
		if err != nil {
			return 0, err
		}
		for i, t := range page {
			if !t.Status.Terminal() && (waiting(t.Status) || t.Target != "") {
				// Parked: its payload stays on disk (parked.go).
				light := *t
				light.Payload, light.Result = nil, nil
				page[i] = &light
				stripped++
			}
		}
		live = append(live, page...)
		if next == "" {
			break
		}
		after = next
	}
	if stripped > 0 {
		// The payloads read to list them are garbage now: give the
		// memory back at once rather than keep it for the next peak.
		debug.FreeOSMemory()
	}
	n := len(live)
	for i := len(live) - 1; i >= 0; i-- { // oldest first
		t := live[i]
		live[i] = nil
		r := &run{task: t, done: make(chan struct{}), h: e.a.handlers.get(t.Type)}
		if t.Payload == nil && (waiting(t.Status) || t.Target != "") {
			r.light = true // stripped while listed
		}
		e.mu.Lock()
		e.runs[t.ID] = r
		e.mu.Unlock()
		if t.Target != "" {
			// Delegated: the peer runs it and its reports arrive through
			// the outbox, whatever happened here.
			e.park(r)
			continue
		}
		if r.h == nil {
			e.finish(r, wire.StatusFailed, nil, wire.Errorf(wire.CodeCapabilityLacking, "no handler for task type %q after restart", t.Type))
			continue
		}
		switch t.Status {
		case wire.StatusExecuting:
			if !r.h.Idempotent {
				e.finish(r, wire.StatusFailed, nil, wire.Errorf(wire.CodeAgentRestarted, "the agent restarted while the task was executing"))
				continue
			}
			e.logLine(t.ID, "agent restarted: running the task again (its handler is idempotent)")
		case wire.StatusPending, wire.StatusInfoProvided, wire.StatusHumanApproved:
			if err := e.apply(r, true, func(t *wire.Task, now time.Time) ([]*wire.Event, error) {
				return e.transition(t, wire.StatusConfirmed, now, "resumed after restart")
			}); err != nil {
				return 0, err
			}
		}
		switch r.snapshot().Status {
		case wire.StatusConfirmed, wire.StatusExecuting:
			_ = e.acquire(true)
			r.slot = true
			e.start(r)
		default:
			e.park(r)
		}
	}
	return n, ctx.Err()
}

// shutdown stops admitting tasks, waits for running ones until ctx is done,
// then stops the rest; they stay executing in the store for the next start.
func (e *engine) shutdown(ctx context.Context) {
	e.mu.Lock()
	e.closing = true
	e.mu.Unlock()
	// Handlers waiting for a person (askHuman) end now rather than at the
	// end of the grace period: their tasks are in need_human on disk and
	// wait there across the restart.
	close(e.stopping)
	idle := make(chan struct{})
	go func() { e.wg.Wait(); close(idle) }()
	select {
	case <-idle:
	case <-ctx.Done():
		e.cancelBase(errShutdown)
		<-idle
	}
	e.mu.Lock()
	for _, r := range e.runs {
		r.mu.Lock()
		if r.timer != nil {
			r.timer.Stop()
		}
		r.mu.Unlock()
	}
	e.mu.Unlock()
	e.hub.CloseAll()
}
