package agent

import (
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// NoteWaiting adds why to the history of the tasks delegated to peer that
// are still pending and have not been told so (the network calls it when
// the peer refuses this agent's messages).
func (a *Agent) NoteWaiting(peer, why string) {
	if a.eng != nil {
		a.eng.noteWaiting(peer, why)
	}
}

// noteWaiting adds why to the history of the tasks for peer that are
// still pending and have not been told so.
func (e *engine) noteWaiting(peer, why string) {
	e.mu.Lock()
	var runs []*run
	for _, r := range e.runs {
		runs = append(runs, r)
	}
	e.mu.Unlock()
	for _, r := range runs {
		_ = e.apply(r, false, func(t *wire.Task, now time.Time) ([]*wire.Event, error) {
			return noteWaiting(e, t, peer, why, now), nil
		})
	}
}

// noteWaiting appends why to t's history (a note: from and to pending)
// when t waits for peer and its last entry is not already that note.
func noteWaiting(e *engine, t *wire.Task, peer, why string, now time.Time) []*wire.Event {
	if t.Target != peer || t.Status != wire.StatusPending || len(t.History) == 0 || t.History[len(t.History)-1].Reason == why {
		return nil
	}
	t.History = append(t.History[:len(t.History):len(t.History)], wire.Transition{From: t.Status, Status: t.Status, At: wire.Time{Time: now}, Reason: why})
	t.UpdatedAt = now
	return []*wire.Event{e.newEvent(t, wire.EventLog, now, &wire.LogEventData{TaskID: t.ID, Line: why})}
}
