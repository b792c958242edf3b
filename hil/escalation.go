package hil

import (
	"fmt"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/hil/hildb"
	"github.com/synapse-edge/synapse/wire"
)

// arm sets the timer of e's current level; m.mu is held.
func (m *Manager) arm(e *entry) {
	if e.timer != nil {
		e.timer.Stop()
	}
	id, level, round := e.rec.TaskID, e.rec.Level, e.rec.EnteredAt
	wait := max(e.rec.Deadline.Sub(m.clock.Now()), 0)
	e.timer = m.clock.AfterFunc(wait, func() { m.expire(id, level, round) })
}

// expire runs when a level's deadline passes: the request moves to the
// next level, or after the last one the default action is applied.
func (m *Manager) expire(id string, level int, round time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.pending[id]
	if m.closed || e == nil || e.rec.Level != level || !e.rec.EnteredAt.Equal(round) {
		return // decided, closed or escalated meanwhile
	}
	if e.busy {
		e.expired = true // handled when the decision being applied ends
		return
	}
	now := m.clock.Now()
	if level < len(m.levels) {
		m.escalate(e, now)
		return
	}
	e.busy = true
	req := agent.DecisionRequest{Action: m.defAction,
		Notes: fmt.Sprintf("no decision within the deadline of level %d; default action %s applied", level, m.defAction)}
	if m.defAction == agent.ActionReject {
		req.RejectionReason = "no decision before the last escalation deadline"
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		_, _ = m.apply(m.bg, e, systemPrincipal(), req, level)
	}()
}

// escalate moves e one level up; m.mu is held.
func (m *Manager) escalate(e *entry, now time.Time) {
	rec := *e.rec
	rec.Level++
	lv := m.levels[rec.Level-1]
	rec.Deadline = now.Add(lv.Deadline())
	detail := fmt.Sprintf("no decision by the deadline of level %d; reviewers %s, deadline %s", rec.Level-1, lv.ReviewersScope, wire.FormatTime(rec.Deadline))
	c := change{
		rec:    &rec,
		steps:  []*hildb.Step{{TaskID: rec.TaskID, At: now, Step: StepEscalated, Level: rec.Level, Actor: SystemActor, Detail: detail}},
		event:  ChangeEscalated,
		note:   fmt.Sprintf("hil: escalated to level %d of %d (%s)", rec.Level, len(m.levels), detail),
		notify: rec.Level,
	}
	if err := m.save(m.bg, c); err != nil {
		m.log.Error("escalate", "task_id", rec.TaskID, "level", rec.Level, "err", err)
		// Try again a little later.
		id, level, round := e.rec.TaskID, e.rec.Level, e.rec.EnteredAt
		e.timer = m.clock.AfterFunc(retryEscalation, func() { m.expire(id, level, round) })
		return
	}
	m.install(c)
}
