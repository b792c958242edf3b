package agent

import (
	"slices"
	"strings"
	"sync"

	"github.com/synapse-edge/synapse/wire"
)

// What the human-in-the-loop layer (package hil) needs of the engine: the
// tasks waiting for a person, a signal when they change, and a way to write
// its steps into a task's events. Decisions go through Decide like any
// other.

// HumanChanged returns a channel that is closed at the next durable change
// of a task into, within or out of need_human or human_deciding (and at
// the creation of a task in one of them). Take it before reading
// WaitingForHuman and take a new one after each wake, so that no change is
// missed.
func (a *Agent) HumanChanged() <-chan struct{} {
	if a.eng == nil {
		return nil
	}
	return a.eng.human.wait()
}

// signal is a channel closed and replaced at each change.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

func (s *signal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

func (s *signal) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// forHuman reports whether a task in status s waits for a person.
func forHuman(s wire.Status) bool {
	return s == wire.StatusNeedHuman || s == wire.StatusHumanDeciding
}

// humanChange wakes HumanChanged's waiters when t, which was in status
// prev ("" when it was just created), is or was waiting for a person. It
// is called once the change is durable.
func (e *engine) humanChange(prev wire.Status, t *wire.Task) {
	if forHuman(prev) || forHuman(t.Status) {
		e.human.fire()
	}
}

// WaitingForHuman returns the live tasks in need_human or human_deciding,
// in id order (oldest first). It reads only memory, so it is cheap enough
// to poll. The tasks are snapshots: do not modify them.
func (a *Agent) WaitingForHuman() []*wire.Task {
	e := a.eng
	if e == nil {
		return nil
	}
	e.mu.Lock()
	runs := make([]*run, 0, len(e.runs))
	for _, r := range e.runs {
		runs = append(runs, r)
	}
	e.mu.Unlock()
	var out []*wire.Task
	for _, r := range runs {
		if t := r.snapshot(); forHuman(t.Status) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(x, y *wire.Task) int { return strings.Compare(x.ID, y.ID) })
	return out
}

// NoteTask appends a log event with line to a live task (it shows in the
// task's stream and stored events). It does nothing for a task that is
// final or unknown. The write is queued in order with the task's other
// changes; NoteTask does not wait for it.
func (a *Agent) NoteTask(id, line string) {
	if a.eng != nil {
		a.eng.logLine(id, line)
	}
}
