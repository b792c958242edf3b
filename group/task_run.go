package group

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/group/groupdb"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// A group task runs on the owner's agent as one taskRun: a dispatcher that
// submits each part through the task engine (with an idempotency record,
// so that a part is submitted once even across a restart), one watcher
// per part that waits for its task to end, and a timer at the deadline.
// Every change of a part is stored; the first change that makes the task
// final also aggregates, records and announces it, and stops the run.

// taskRun is a running group task.
type taskRun struct {
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	timer  agent.Timer
	once   sync.Once
}

// end stops the run's watchers and timer and wakes WaitTask.
func (r *taskRun) end() {
	r.once.Do(func() {
		r.cancel()
		if r.timer != nil {
			r.timer.Stop()
		}
		close(r.done)
	})
}

// partOutcome is how a part ended.
type partOutcome struct {
	status string
	result wire.JSONValue
	code   wire.ErrorCode
	error  string
}

// launch starts (or, after a restart, resumes) a running group task.
func (m *Manager) launch(t *Task) {
	key := t.GroupID + "/" + t.TaskID
	groupID, taskID := t.GroupID, t.TaskID
	m.mu.Lock()
	if m.closed || m.runs[key] != nil {
		m.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(m.bg)
	r := &taskRun{ctx: ctx, cancel: cancel, done: make(chan struct{})}
	m.runs[key] = r
	r.timer = m.clock.AfterFunc(t.Deadline.Sub(m.clock.Now()), func() {
		m.spawn(func() { m.expire(groupID, taskID) })
	})
	m.mu.Unlock()
	m.spawn(func() { m.dispatch(r, t) })
}

// dispatch submits the pending parts and watches the running ones.
func (m *Manager) dispatch(r *taskRun, t *Task) {
	for _, p := range t.Parts {
		if r.ctx.Err() != nil {
			return
		}
		switch p.Status {
		case PartPending:
			id, err := m.submitPart(r.ctx, t, p)
			if err != nil {
				if r.ctx.Err() != nil {
					return // shutting down: resumed at the next start
				}
				e := wire.AsError(err)
				m.settle(t.GroupID, t.TaskID, p.Index, partOutcome{status: PartFailed, code: e.Code, error: e.Message})
				continue
			}
			if !m.partStarted(t.GroupID, t.TaskID, p.Index, id) {
				continue
			}
			p.TaskID = id
		case PartRunning:
		default:
			continue
		}
		idx, sub := p.Index, p.TaskID
		m.spawn(func() { m.watch(r, t.GroupID, t.TaskID, idx, sub) })
	}
}

// submitPart hands one part to the task engine: locally for this agent's
// own part, delegated to the member otherwise. It returns the task id.
func (m *Manager) submitPart(ctx context.Context, t *Task, p Part) (string, error) {
	key := t.TaskID + "/" + strconv.Itoa(p.Index)
	if id := m.submitted(key); id != "" {
		return id, nil
	}
	payload := t.Payload
	if len(p.Payload) > 0 {
		payload = p.Payload
	}
	req := &wire.SubmitRequest{TaskType: t.TaskType, Payload: payload}
	if p.Member != m.me {
		req.Target = p.Member
	}
	idem := &agent.IdemRequest{Scope: idemScope, Key: key, Hash: key}
	who := auth.Principal{ID: "group:" + t.GroupID, Name: "group task " + t.TaskID, Scopes: []auth.Scope{auth.ScopeTasksWrite}}
	sub, err := m.a.Submit(ctx, who, req, agent.SubmitOptions{Idempotency: idem})
	if err != nil {
		if id := m.submitted(key); id != "" { // submitted meanwhile
			return id, nil
		}
		return "", err
	}
	return sub.ID, nil
}

// submitted is the task id a part was submitted as, from its idempotency
// record ("" when it was not submitted).
func (m *Manager) submitted(key string) string {
	return m.a.IdempotentTask(idemScope, key)
}

// partStarted records a part's task id; false when the group task ended
// meanwhile.
func (m *Manager) partStarted(groupID, taskID string, idx int, sub string) bool {
	ok := false
	err := m.update(m.bg, func(tx *store.Tx) error {
		ok = false
		t, err := getTask(tx, groupID, taskID)
		if err != nil || t.final() || idx >= len(t.Parts) {
			return err
		}
		p := &t.Parts[idx]
		if p.Status != PartPending {
			ok = p.Status == PartRunning
			return nil
		}
		p.TaskID, p.Status, ok = sub, PartRunning, true
		return putTask(tx, t)
	})
	if err != nil && !m.isClosed() {
		m.log.Error("record group task part", "group_task_id", taskID, "part", idx, "err", err)
	}
	return ok && err == nil
}

// watch waits for a part's task to end and settles the part.
func (m *Manager) watch(r *taskRun, groupID, taskID string, idx int, sub string) {
	for range maxWaits {
		start := time.Now()
		t, err := m.a.Wait(r.ctx, sub, waitSlice)
		if r.ctx.Err() != nil {
			return
		}
		if err != nil {
			e := wire.AsError(err)
			m.settle(groupID, taskID, idx, partOutcome{status: PartFailed, code: e.Code, error: e.Message})
			return
		}
		if t.Status.Terminal() {
			m.settle(groupID, taskID, idx, outcomeOf(t))
			return
		}
		if time.Since(start) < waitSlice/2 {
			// Not live in the engine (yet): look again a little later.
			tm := time.NewTimer(notRunningPoll)
			select {
			case <-tm.C:
			case <-r.ctx.Done():
				tm.Stop()
				return
			}
		}
	}
}

// outcomeOf maps a final task to its part's outcome.
func outcomeOf(t *wire.Task) partOutcome {
	switch t.Status {
	case wire.StatusCompleted:
		res := t.Result
		if len(res) == 0 {
			res = wire.JSONValue("null")
		}
		return partOutcome{status: PartCompleted, result: res}
	case wire.StatusRejected:
		return partOutcome{status: PartFailed, code: t.ErrorCode, error: "rejected: " + t.ErrorMessage}
	case wire.StatusCancelled:
		return partOutcome{status: PartFailed, code: t.ErrorCode, error: "cancelled"}
	}
	return partOutcome{status: PartFailed, code: t.ErrorCode, error: t.ErrorMessage}
}

// settle records how a part ended and finishes the group task when that
// makes it final.
func (m *Manager) settle(groupID, taskID string, idx int, out partOutcome) {
	var fin *Task
	var cancel []string
	err := m.update(m.bg, func(tx *store.Tx) error {
		fin, cancel = nil, nil
		t, err := getTask(tx, groupID, taskID)
		if err != nil || t.final() || idx >= len(t.Parts) {
			return err
		}
		p := &t.Parts[idx]
		if partFinal(p.Status) {
			return nil
		}
		p.Status, p.Result, p.ErrorCode, p.Error = out.status, out.result, out.code, out.error
		p.FinishedAt = wire.Time{Time: m.now()}
		if !decided(t) {
			return putTask(tx, t)
		}
		cancel, err = m.finish(tx, t)
		fin = t
		return err
	})
	if err != nil {
		if !m.isClosed() {
			m.log.Error("record group task part", "group_task_id", taskID, "part", idx, "err", err)
		}
		return
	}
	if fin != nil {
		m.finished(fin, cancel)
	}
}

// decided reports whether a group task has what it needs: every part
// ended, or for first one result.
func decided(t *Task) bool {
	all := true
	for _, p := range t.Parts {
		if t.Aggregate == AggregateFirst && p.Status == PartCompleted {
			return true
		}
		all = all && partFinal(p.Status)
	}
	return all
}

// expire ends a group task at its deadline: the parts still running are
// timed out.
func (m *Manager) expire(groupID, taskID string) {
	var fin *Task
	var cancel []string
	err := m.update(m.bg, func(tx *store.Tx) error {
		fin, cancel = nil, nil
		t, err := getTask(tx, groupID, taskID)
		if err != nil || t.final() {
			return err
		}
		cancel, err = m.finish(tx, t)
		fin = t
		return err
	})
	if err != nil {
		if !m.isClosed() {
			m.log.Error("expire group task", "group_task_id", taskID, "err", err)
		}
		return
	}
	if fin != nil {
		m.finished(fin, cancel)
	}
}

// finish ends the parts still running (cancelled when another answered
// first, timed out otherwise), aggregates, stores, records and announces
// the task. It returns the task ids to cancel.
func (m *Manager) finish(tx *store.Tx, t *Task) ([]string, error) {
	now := wire.Time{Time: m.now()}
	answered := false
	for _, p := range t.Parts {
		answered = answered || p.Status == PartCompleted
	}
	var cancel []string
	for i := range t.Parts {
		p := &t.Parts[i]
		if partFinal(p.Status) {
			continue
		}
		if t.Aggregate == AggregateFirst && answered {
			p.Status, p.Error = PartCancelled, "another member answered first"
		} else {
			p.Status, p.Error = PartTimedOut, fmt.Sprintf("no result within %d s", t.TimeoutSeconds)
		}
		p.FinishedAt = now
		if p.TaskID != "" {
			cancel = append(cancel, p.TaskID)
		}
	}
	aggregate(t)
	t.FinishedAt = now
	if err := putTask(tx, t); err != nil {
		return nil, err
	}
	if err := m.record(tx, t.GroupID, "task_result:"+t.TaskID, wire.MsgGroupTaskResult, t.Requester, t); err != nil {
		return nil, err
	}
	g, err := getGroup(tx, t.GroupID)
	if err != nil {
		return nil, err
	}
	m.log.Info("group task finished", "group_id", t.GroupID, "group_task_id", t.TaskID, "status", t.Status,
		"missing", len(t.Missing), "agreement", t.Agreement)
	return cancel, m.announce(tx, g, wire.MsgGroupTaskResult, &taskPayload{Task: t})
}

// finished stops a finished task's run and cancels the tasks of the parts
// it no longer waits for.
func (m *Manager) finished(t *Task, cancel []string) {
	key := t.GroupID + "/" + t.TaskID
	m.mu.Lock()
	r := m.runs[key]
	delete(m.runs, key)
	m.mu.Unlock()
	if r != nil {
		r.end()
	}
	for _, id := range cancel {
		m.spawn(func() {
			ctx, stop := context.WithTimeout(m.bg, 10*time.Second)
			defer stop()
			if _, err := m.a.Cancel(ctx, id); err != nil {
				m.log.Debug("cancel group task part", "task_id", id, "err", err)
			}
		})
	}
}

// resumeTasks resumes the running group tasks this agent coordinates.
func (m *Manager) resumeTasks(ctx context.Context) error {
	var running []*Task
	err := m.view(func(tx *store.Tx) error {
		return groupdb.Tasks(tx, "", func(groupID, taskID string, doc []byte) error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			t := new(Task)
			if err := json.Unmarshal(doc, t); err != nil {
				return fmt.Errorf("decode group task %s: %w", taskID, err)
			}
			if t.Status != TaskRunning {
				return nil
			}
			if g, err := getGroup(tx, groupID); err == nil && g.Owner == m.me {
				running = append(running, t)
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	for _, t := range running {
		m.launch(t)
	}
	return nil
}
