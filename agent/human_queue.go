package agent

import (
	"slices"
	"strings"

	"github.com/synapse-edge/synapse/wire"
)

// What the human-in-the-loop layer (package hil) needs of the engine: the
// tasks waiting for a person, and a way to write its steps into a task's
// events. Decisions go through Decide like any other.

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
		if t := r.snapshot(); t.Status == wire.StatusNeedHuman || t.Status == wire.StatusHumanDeciding {
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
