package agent

import (
	"errors"
	"fmt"
	"time"

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
	settled(e.db)
	stored, err := e.get(snap.ID)
	if err != nil {
		e.log.Error("read back a task after a failed write", "task_id", snap.ID, "err", err)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.task == snap {
		r.task, r.light = stored, false
	}
}

// retryFinal keeps a run whose final state could not be written live and
// writes it again once the store reports it can commit (its health probe
// tells): no task stays executing or confirmed until a restart. False
// when the agent is shutting down (the next start recovers the task).
func (e *engine) retryFinal(r *run, to wire.Status, result wire.JSONValue, fail *wire.Error, f *fold) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closing {
		return false
	}
	e.wg.Add(1)
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
	settled(e.db)
	stored, gerr := e.get(r.task.ID)
	if gerr == nil {
		r.task = stored
		e.track(r)
	}
	return gerr == nil
}

// viewSettled is db.View made again, for up to 10 s, while it fails
// with store.ErrOutcomeUnknown: after a commit of unknown outcome the
// store reopens its file, and a read made meanwhile fails so. Memory
// then follows the file, not the failed attempt (resync, adopt), and a
// keyed retry finds what the file holds. (The store's callbacks run in
// its writer, which reopens the file: they never see it closed.)
func viewSettled(db *store.DB, fn func(tx *store.Tx) error) error {
	end := time.Now().Add(10 * time.Second)
	err := db.View(fn)
	for errors.Is(err, store.ErrOutcomeUnknown) && time.Now().Before(end) {
		time.Sleep(10 * time.Millisecond) // the store is reopening its file
		err = db.View(fn)
	}
	return err
}

// settled waits, for up to 10 s, until what the store's readers see is
// what its log holds (store.DB.Settled): after a commit of unknown
// outcome the failed group may be in the log after all, and whether it
// is decides whether a write is adopted, resynced or found by a keyed
// retry. A disk that fails longer leaves the answer to the next start,
// which recovers every task the log holds. Never called from the
// store's writer, which is what settles it.
func settled(db *store.DB) {
	for end := time.Now().Add(10 * time.Second); !db.Settled() && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
}

// follows refuses a write of a change made on prev when a task write has
// failed since the change was queued (failed is the count then) and the
// file does not hold prev: memory had moved on past a commit that is not
// in the file, and the change on top of it would skip event numbers (db
// check: "event 1 kept with the task is not the task's event 2"). The
// refused write is read back (resync) and refused to its sender, who
// tries again. Without a failure it reads nothing.
func (e *engine) follows(tx *store.Tx, failed uint64, prev *wire.Task) error {
	if e.failedWrites.Load() == failed {
		return nil
	}
	if stored, err := tx.Task(prev.ID); err != nil || stored.Seq != prev.Seq {
		return fmt.Errorf("task %s: its state before this change was not stored (%v)", prev.ID, err)
	}
	return nil
}
