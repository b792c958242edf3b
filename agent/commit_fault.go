package agent

import (
	"errors"

	"github.com/synapse-edge/synapse/store"

	"github.com/synapse-edge/synapse/wire"
)

// After a failed commit (issue #28) the write may or may not be in the
// file (store.ErrOutcomeUnknown): memory follows the file, not the
// attempt, and a final state that could not be written is written again
// once the store can commit.

// resync makes the run's task what the store holds after the write of
// snap failed: its outcome may be unknown (the commit may have reached
// the disk), and the file, not memory, says which. A later change made
// meanwhile is left alone.
func (e *engine) resync(r *run, snap *wire.Task) {
	stored, err := e.get(snap.ID)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.task != snap {
		return
	}
	if err != nil {
		e.log.Error("read back a task after a failed write", "task_id", snap.ID, "err", err)
		return
	}
	r.task = stored
	r.light = false
}

// retryFinal keeps a run whose final state could not be written live and
// writes it again once the store reports it can commit (its health probe
// tells): no task stays executing or confirmed until a restart. False
// when the agent is shutting down (the next start recovers the task).
func (e *engine) retryFinal(r *run, to wire.Status, result wire.JSONValue, fail *wire.Error, f *fold) bool {
	e.mu.Lock()
	closing := e.closing
	if !closing {
		e.wg.Add(1)
	}
	e.mu.Unlock()
	if closing {
		return false
	}
	go func() {
		defer e.wg.Done()
		if e.db.WaitHealthy(e.base) {
			e.finishFrom(r, to, result, fail, f)
		}
	}()
	return true
}

// adopt takes on a submitted task whose creation's commit had an unknown
// outcome (err) when the file holds it after all: it is tracked and run
// like a task recovered at start, so it is neither left confirmed
// forever nor run twice (a keyed retry finds it). False when err is
// another failure or the task is not in the file.
func (e *engine) adopt(r *run, err error) bool {
	if !errors.Is(err, store.ErrOutcomeUnknown) {
		return false
	}
	stored, gerr := e.get(r.task.ID)
	if gerr != nil {
		return false
	}
	r.task = stored
	e.track(r)
	return true
}
