package hil

import (
	"context"
	"fmt"
	"time"

	"github.com/synapse-edge/synapse/hil/hildb"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// A change the manager makes: the new record, its audit steps, and what
// to do once they are durable.
type change struct {
	rec   *hildb.Request
	steps []*hildb.Step
	// what the feed reports ("" for nothing)
	event string
	// note is written into the task's events.
	note string
	// notify is the level whose notify_url hears of the change (0: none).
	notify int
}

// Sync takes in the tasks that wait for a person now: new ones become
// requests, requests whose task stopped waiting (cancelled, expired,
// decided elsewhere) are closed. The manager calls it when the agent
// signals a change (agent.Agent.HumanChanged) and before it reads or
// decides.
func (m *Manager) Sync(ctx context.Context) error {
	waiting := m.a.WaitingForHuman()
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	var changes []change
	seen := make(map[string]bool, len(waiting))
	for _, t := range waiting {
		seen[t.ID] = true
		entered := enteredAt(t)
		e := m.pending[t.ID]
		switch {
		case e != nil && e.busy:
			continue // a decision is being applied
		case e != nil && e.rec.EnteredAt.Equal(entered):
			continue // known
		case e == nil && m.ended[t.ID].Equal(entered):
			continue // decided or closed; the task's new state is on its way
		case e != nil:
			changes = append(changes, m.closeChange(e.rec, now, "the task asked a person again"))
		}
		changes = append(changes, m.createChange(t, entered, now))
	}
	for id := range m.ended {
		if !seen[id] {
			delete(m.ended, id)
		}
	}
	for id, e := range m.pending {
		if seen[id] || e.busy {
			continue
		}
		status := "gone"
		if t, err := m.a.Task(id); err == nil {
			if t.Status == wire.StatusNeedHuman || t.Status == wire.StatusHumanDeciding {
				// Changing right now (the new state is not stored yet):
				// the agent signals again once it is.
				continue
			}
			status = string(t.Status)
		}
		changes = append(changes, m.closeChange(e.rec, now, "the task is "+status+" without a decision made here"))
	}
	if len(changes) > 0 {
		if err := m.save(ctx, changes...); err != nil {
			return err
		}
		for _, c := range changes {
			m.install(c)
		}
	}
	// Requests loaded at Start get their timers here.
	for _, e := range m.pending {
		if e.timer == nil && !e.busy {
			m.arm(e)
		}
	}
	return nil
}

// enteredAt is when t last entered need_human, in the millisecond
// precision stored histories keep.
func enteredAt(t *wire.Task) time.Time {
	for i := len(t.History) - 1; i >= 0; i-- {
		if t.History[i].Status == wire.StatusNeedHuman {
			return t.History[i].At.Time.Truncate(time.Millisecond)
		}
	}
	return t.UpdatedAt.Truncate(time.Millisecond)
}

// createChange makes the request of a task that started waiting.
func (m *Manager) createChange(t *wire.Task, entered, now time.Time) change {
	h := &wire.TaskNeedHumanPayload{TaskID: t.ID, EscalationLevel: 1,
		Reason: wire.Reason{Code: "approval_required", Message: "the task waits for a person's approval"}}
	if t.Human != nil {
		c := *t.Human
		h = &c
	}
	level := min(max(h.EscalationLevel, 1), len(m.levels))
	deadline := now.Add(m.levels[level-1].Deadline())
	if h.Deadline != "" {
		if d, err := time.Parse(time.RFC3339Nano, h.Deadline); err == nil && d.After(now) {
			deadline = d
		}
	}
	rec := &hildb.Request{
		TaskID: t.ID, TaskType: t.Type, Target: t.Target, EnteredAt: entered, Request: h,
		Level: level, Deadline: deadline, CreatedAt: now, State: hildb.Pending,
	}
	lv := m.levels[level-1]
	detail := fmt.Sprintf("%s: %s", h.Reason.Code, h.Reason.Message)
	return change{
		rec:    rec,
		steps:  []*hildb.Step{{TaskID: t.ID, At: now, Step: StepCreated, Level: level, Detail: detail}},
		event:  ChangeCreated,
		note:   fmt.Sprintf("hil: request created at level %d of %d (reviewers %s, deadline %s)", level, len(m.levels), lv.ReviewersScope, wire.FormatTime(deadline)),
		notify: level,
	}
}

// closeChange closes a request whose task stopped waiting.
func (m *Manager) closeChange(prev *hildb.Request, now time.Time, why string) change {
	rec := *prev
	rec.State, rec.ClosedAt, rec.Note = hildb.Closed, now, why
	return change{
		rec:   &rec,
		steps: []*hildb.Step{{TaskID: rec.TaskID, At: now, Step: StepClosed, Level: rec.Level, Detail: why}},
		event: ChangeClosed,
		note:  "hil: request closed: " + why,
	}
}

// save writes changes durably, in one transaction.
func (m *Manager) save(ctx context.Context, changes ...change) error {
	err := m.db.Update(ctx, func(tx *store.Tx) error {
		for _, c := range changes {
			if c.rec != nil {
				if err := hildb.PutRequest(tx, c.rec); err != nil {
					return err
				}
			}
			for _, s := range c.steps {
				if err := hildb.AppendStep(tx, s); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return wire.Errorf(wire.CodeSysStorage, "save request: %v", err)
	}
	return nil
}

// install applies a saved change in memory and tells everyone; m.mu is
// held.
func (m *Manager) install(c change) {
	id := c.rec.TaskID
	if c.rec.State == hildb.Pending {
		e := m.pending[id]
		if e == nil || !e.rec.EnteredAt.Equal(c.rec.EnteredAt) {
			if e != nil && e.timer != nil {
				e.timer.Stop()
			}
			e = &entry{}
			m.pending[id] = e
		}
		e.rec = c.rec
		m.arm(e)
	} else if e := m.pending[id]; e != nil && e.rec.EnteredAt.Equal(c.rec.EnteredAt) {
		if e.timer != nil {
			e.timer.Stop()
		}
		delete(m.pending, id)
		m.ended[id] = c.rec.EnteredAt
	}
	var ev Event
	if c.event != "" {
		ev = m.feed.publish(c.event, view(c.rec, m.levels))
	}
	if c.note != "" {
		m.a.NoteTask(id, c.note)
	}
	if c.notify > 0 && c.event != "" {
		m.notify(ev, c.notify)
	}
}
