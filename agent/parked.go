package agent

import (
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Parked tasks (issue #15, item 6): a task that waits — in info_needed or
// need_human without a handler running, or delegated to a peer — holds no
// execution slot, so its payload must not stay in memory either. Once the
// state it waits in is durable, its run keeps a light copy of the task
// without the payload (run.light); any change to it (apply) first reads
// the whole task back from the store, so what is written and published is
// what it was. The tasks waiting in info_needed or need_human without a
// slot are counted, and a new one beyond max_parked_tasks is refused
// (429 too_many_parked_tasks, nothing stored).

// waiting reports whether s is a state in which a task waits for someone.
func waiting(s wire.Status) bool {
	return s == wire.StatusInfoNeeded || s == wire.StatusNeedHuman || s == wire.StatusHumanDeciding
}

// countParked updates the parked count after r.task or r.slot changed;
// r.mu is held.
func (e *engine) countParked(r *run) {
	t := r.task
	want := t != nil && t.Target == "" && !r.slot && waiting(t.Status)
	if want == r.parked {
		return
	}
	r.parked = want
	if want {
		e.parkedN.Add(1)
	} else {
		e.parkedN.Add(-1)
	}
}

// reserveParked counts r as parked before it is created, or refuses when
// max_parked_tasks tasks wait already.
func (e *engine) reserveParked(r *run) error {
	limit := int64(e.a.cfg.Load().MaxParkedTasks)
	for {
		n := e.parkedN.Load()
		if n >= limit {
			return wire.Errorf(wire.CodeTooManyParked, "%d tasks already wait for information or a person (max_parked_tasks is %d): provide their information, decide or cancel some, then submit again", n, limit).
				With("max_parked_tasks", limit)
		}
		if e.parkedN.CompareAndSwap(n, n+1) {
			r.parked = true
			return nil
		}
	}
}

// unreserveParked gives back a reservation of a task that was not created.
func (e *engine) unreserveParked(r *run) {
	if r.parked {
		r.parked = false
		e.parkedN.Add(-1)
	}
}

// lightable reports whether r may drop its payload; r.mu is held.
func lightable(r *run) bool {
	t := r.task
	return !r.light && !r.unsaved && !r.slot && r.cancel == nil && r.decision == nil && r.preDecided == nil &&
		!t.Status.Terminal() && (waiting(t.Status) || t.Target != "") && len(t.Payload) > 0
}

// lighten drops the payload of a parked run whose state snap is durable;
// nothing when the run changed since. r.mu is not held.
func (e *engine) lighten(r *run, snap *wire.Task) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.task == snap {
		e.makeLight(r)
	}
}

// makeLight replaces r.task by a copy without the payload; r.mu is held
// and r.task is what the store holds.
func (e *engine) makeLight(r *run) {
	if !lightable(r) {
		return
	}
	light := *r.task
	light.Payload, light.Result = nil, nil
	r.task = &light
	r.light = true
}

// heavy reads the whole task of a light run back from the store; r.mu is
// held. A light run has no write in flight, so the store holds its state.
func (e *engine) heavy(r *run) error {
	if !r.light {
		return nil
	}
	var t *wire.Task
	err := e.db.View(func(tx *store.Tx) (err error) {
		t, err = tx.Task(r.task.ID)
		return err
	})
	if err != nil {
		return wire.Errorf(wire.CodeSysStorage, "read parked task %s: %v", r.task.ID, err)
	}
	r.task, r.light = t, false
	return nil
}

// ParkedTasks returns how many tasks wait in info_needed or need_human
// without an execution slot.
func (a *Agent) ParkedTasks() int {
	if a.eng == nil {
		return 0
	}
	return int(a.eng.parkedN.Load())
}

// whole returns r's task with its payload, read from the store when the
// run is light (the run stays light).
func (e *engine) whole(r *run) (*wire.Task, error) {
	r.mu.Lock()
	t, light := r.task, r.light
	if !light {
		r.mu.Unlock()
		return t, nil
	}
	defer r.mu.Unlock() // held so that no write changes the stored state meanwhile
	var full *wire.Task
	err := e.db.View(func(tx *store.Tx) (err error) {
		full, err = tx.Task(t.ID)
		return err
	})
	if err != nil {
		return nil, wire.Errorf(wire.CodeSysStorage, "read parked task %s: %v", t.ID, err)
	}
	return full, nil
}
