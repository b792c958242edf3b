package group

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/group/groupdb"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Distribution modes of a group task.
const (
	// ModeFanout sends the whole payload to every chosen member.
	ModeFanout = "fanout"
	// ModeSplit splits the list in the payload's SplitField into one
	// contiguous part per chosen member (fewer when the list is shorter).
	ModeSplit = "split"
)

// Aggregations of the parts' results.
const (
	// AggregateAll: Result is a list with each part's result in part
	// order (null for a missing part).
	AggregateAll = "all"
	// AggregateFirst: Result is the first result returned; the other parts
	// are cancelled.
	AggregateFirst = "first"
	// AggregateMajority: Result is the result more than half of the parts
	// returned (compared as JSON values).
	AggregateMajority = "majority"
)

// States of a group task.
const (
	// TaskRequested: sent to the owner's agent (on the requester's agent
	// only, until the result arrives).
	TaskRequested = "requested"
	TaskRunning   = "running"
	// TaskCompleted: the aggregate is complete.
	TaskCompleted = "completed"
	// TaskPartial: aggregate all with some parts missing.
	TaskPartial = "partial"
	// TaskFailed: no usable aggregate (no result, or no majority).
	TaskFailed = "failed"
)

// States of a part.
const (
	PartPending   = "pending" // not handed to the task engine yet
	PartRunning   = "running"
	PartCompleted = "completed"
	PartFailed    = "failed"
	PartTimedOut  = "timed_out"
	// PartCancelled: no longer needed (another part answered first).
	PartCancelled = "cancelled"
)

// Group task limits and timing.
const (
	// DefaultTaskTimeout is a group task's deadline when it names none.
	DefaultTaskTimeout = 60 * time.Second
	// idemScope scopes the idempotency records that make each part's
	// submission happen once, across restarts.
	idemScope = "group-task"
	// waitSlice is how long one wait for a part lasts; notRunningPoll how
	// long to wait before looking again at a part that is not live.
	waitSlice      = time.Minute
	notRunningPoll = time.Second
	maxWaits       = 1 << 20
)

// TaskRequest is the body of POST /group/{id}/task.
type TaskRequest struct {
	TaskType string         `json:"task_type" msgpack:"task_type"`
	Payload  wire.JSONValue `json:"payload,omitempty" msgpack:"payload,omitempty"`
	// Mode is fanout (default) or split.
	Mode string `json:"mode,omitempty" msgpack:"mode,omitempty"`
	// SplitField names the list field of the payload that split divides.
	SplitField string `json:"split_field,omitempty" msgpack:"split_field,omitempty"`
	// Aggregate is all (default), first or majority.
	Aggregate string `json:"aggregate,omitempty" msgpack:"aggregate,omitempty"`
	// Members, if set, are the members to use; otherwise every member
	// that declared the task type.
	Members []string `json:"members,omitempty" msgpack:"members,omitempty"`
	// TimeoutSeconds is the deadline of the whole group task; default 60.
	TimeoutSeconds int `json:"timeout_seconds,omitempty" msgpack:"timeout_seconds,omitempty"`
}

// Task is a group task: its request, its parts and their aggregate.
type Task struct {
	TaskID         string         `json:"group_task_id" msgpack:"group_task_id"`
	GroupID        string         `json:"group_id" msgpack:"group_id"`
	TaskType       string         `json:"task_type" msgpack:"task_type"`
	Payload        wire.JSONValue `json:"payload" msgpack:"payload"`
	Mode           string         `json:"mode" msgpack:"mode"`
	SplitField     string         `json:"split_field,omitempty" msgpack:"split_field,omitempty"`
	Aggregate      string         `json:"aggregate" msgpack:"aggregate"`
	Members        []string       `json:"members,omitempty" msgpack:"members,omitempty"`
	TimeoutSeconds int            `json:"timeout_seconds" msgpack:"timeout_seconds"`
	Requester      string         `json:"requester" msgpack:"requester"`
	Status         string         `json:"status" msgpack:"status"`
	CreatedAt      wire.Time      `json:"created_at" msgpack:"created_at"`
	Deadline       wire.Time      `json:"deadline,omitzero" msgpack:"deadline,omitempty"`
	FinishedAt     wire.Time      `json:"finished_at,omitzero" msgpack:"finished_at,omitempty"`
	Parts          []Part         `json:"parts,omitempty" msgpack:"parts,omitempty"`
	// Result is the aggregate (see the Aggregate constants).
	Result wire.JSONValue `json:"result,omitempty" msgpack:"result,omitempty"`
	// Agreement is, for majority, how many parts returned Result (or the
	// largest number that agreed, when there was no majority).
	Agreement int `json:"agreement,omitempty" msgpack:"agreement,omitempty"`
	// Missing lists the parts that returned no result, and why.
	Missing []Missing `json:"missing,omitempty" msgpack:"missing,omitempty"`
	Error   string    `json:"error,omitempty" msgpack:"error,omitempty"`
}

// Part is the share of one member.
type Part struct {
	Index  int    `json:"index" msgpack:"index"`
	Member string `json:"member" msgpack:"member"`
	// Payload is the part's payload when it is not the task's (split).
	Payload    wire.JSONValue `json:"payload,omitempty" msgpack:"payload,omitempty"`
	TaskID     string         `json:"task_id,omitempty" msgpack:"task_id,omitempty"`
	Status     string         `json:"status" msgpack:"status"`
	Result     wire.JSONValue `json:"result,omitempty" msgpack:"result,omitempty"`
	ErrorCode  wire.ErrorCode `json:"error_code,omitempty" msgpack:"error_code,omitempty"`
	Error      string         `json:"error,omitempty" msgpack:"error,omitempty"`
	FinishedAt wire.Time      `json:"finished_at,omitzero" msgpack:"finished_at,omitempty"`
}

// Missing is a part that returned no result.
type Missing struct {
	Member string `json:"member" msgpack:"member"`
	Part   int    `json:"part" msgpack:"part"`
	// Reason is failed or timed_out.
	Reason string `json:"reason" msgpack:"reason"`
	Error  string `json:"error,omitempty" msgpack:"error,omitempty"`
}

func (t *Task) final() bool {
	return t.Status == TaskCompleted || t.Status == TaskPartial || t.Status == TaskFailed
}

func partFinal(s string) bool { return s != PartPending && s != PartRunning }

// checkTask validates a request and fills in its defaults.
func checkTask(t *Task) error {
	if t.TaskType == "" || len(t.TaskType) > maxIDLen {
		return invalid("task_type", "task_type must be 1 to %d bytes", maxIDLen)
	}
	if len(t.Payload) == 0 {
		t.Payload = wire.JSONValue("{}")
	}
	if !t.Payload.IsObject() || wire.CheckJSON(t.Payload) != nil {
		return invalid("payload", "payload must be a JSON object")
	}
	switch t.Mode {
	case "":
		t.Mode = ModeFanout
	case ModeFanout, ModeSplit:
	default:
		return invalid("mode", "mode must be fanout or split")
	}
	switch t.Aggregate {
	case "":
		t.Aggregate = AggregateAll
	case AggregateAll, AggregateFirst, AggregateMajority:
	default:
		return invalid("aggregate", "aggregate must be all, first or majority")
	}
	if t.Mode == ModeSplit {
		if t.SplitField == "" {
			return invalid("split_field", "split needs split_field: the list field of the payload to divide")
		}
		if t.Aggregate != AggregateAll {
			return invalid("aggregate", "a split task aggregates all its parts")
		}
	} else if t.SplitField != "" {
		return invalid("split_field", "split_field goes with mode split")
	}
	switch {
	case t.TimeoutSeconds == 0:
		t.TimeoutSeconds = int(DefaultTaskTimeout / time.Second)
	case t.TimeoutSeconds < 1 || t.TimeoutSeconds > maxTaskTimeout:
		return invalid("timeout_seconds", "timeout_seconds must be 1 to %d", maxTaskTimeout)
	}
	if len(t.Members) > MaxMembers {
		return invalid("members", "at most %d members", MaxMembers)
	}
	for i, id := range t.Members {
		if err := checkID("members", id); err != nil {
			return err
		}
		if slices.Contains(t.Members[:i], id) {
			return invalid("members", "%s is listed twice", id)
		}
	}
	return nil
}

func getTask(tx *store.Tx, groupID, taskID string) (*Task, error) {
	return getDoc[Task]("group_task", taskID, func() ([]byte, error) { return groupdb.Task(tx, groupID, taskID) })
}

func putTask(tx *store.Tx, t *Task) error {
	return putDoc("group task", t.TaskID, t, func(doc []byte) error { return groupdb.PutTask(tx, t.GroupID, t.TaskID, doc) })
}

// RunTask distributes a task to a group's members; any member may ask. On
// the owner's agent it starts at once (started is true); elsewhere it is
// sent to the owner's agent, and the result arrives as group:task_result.
func (m *Manager) RunTask(ctx context.Context, groupID string, req TaskRequest) (t *Task, started bool, err error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, false, fmt.Errorf("group task id: %w", err)
	}
	proto := &Task{TaskID: id.String(), GroupID: groupID, TaskType: req.TaskType, Payload: req.Payload, Mode: req.Mode,
		SplitField: req.SplitField, Aggregate: req.Aggregate, Members: slices.Clone(req.Members),
		TimeoutSeconds: req.TimeoutSeconds, Requester: m.me, Status: TaskRequested, CreatedAt: wire.Time{Time: m.now()}}
	if err := checkTask(proto); err != nil {
		return nil, false, err
	}
	var launch *Task
	err = m.update(ctx, func(tx *store.Tx) error {
		launch = nil
		g, err := loadActive(tx, groupID)
		if err != nil {
			return err
		}
		if g.Standing != StandingMember {
			return denied("only members of group %s may give it a task", groupID)
		}
		c := *proto
		if g.Owner != m.me {
			t, started = &c, false
			if err := putTask(tx, &c); err != nil {
				return err
			}
			return m.send(tx, g.Owner, wire.MsgGroupTask, &taskPayload{Task: &c})
		}
		if err := m.prepare(tx, g, &c); err != nil {
			return err
		}
		t, started, launch = &c, true, &c
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if launch != nil {
		m.launch(launch)
	}
	return t, started, nil
}

// prepare chooses the members and parts of a task on the owner's agent,
// stores it running and records it. The caller launches it once
// committed.
func (m *Manager) prepare(tx *store.Tx, g *Group, t *Task) error {
	targets, err := m.targets(g, t)
	if err != nil {
		return err
	}
	t.Parts = nil
	if t.Mode == ModeSplit {
		chunks, err := split(t.Payload, t.SplitField, len(targets))
		if err != nil {
			return err
		}
		for i, c := range chunks {
			t.Parts = append(t.Parts, Part{Index: i, Member: targets[i], Payload: c, Status: PartPending})
		}
	} else {
		for i, id := range targets {
			t.Parts = append(t.Parts, Part{Index: i, Member: id, Status: PartPending})
		}
	}
	now := m.now()
	t.Status = TaskRunning
	t.Deadline = wire.Time{Time: now.Add(time.Duration(t.TimeoutSeconds) * time.Second)}
	if err := putTask(tx, t); err != nil {
		return err
	}
	m.log.Info("group task started", "group_id", g.GroupID, "group_task_id", t.TaskID, "task_type", t.TaskType,
		"parts", len(t.Parts), "mode", t.Mode, "aggregate", t.Aggregate)
	return m.record(tx, g.GroupID, "task:"+t.TaskID, wire.MsgGroupTask, t.Requester, t)
}

// targets are the members a task goes to: those named, or those that
// declared its type (this agent: that has a handler for it).
func (m *Manager) targets(g *Group, t *Task) ([]string, error) {
	if len(t.Members) > 0 {
		for _, id := range t.Members {
			if g.member(id) == nil {
				return nil, invalid("members", "%s is not a member of group %s", id, g.GroupID)
			}
		}
		return t.Members, nil
	}
	var out []string
	for _, mb := range g.Members {
		if mb.AgentID == m.me {
			if m.a.SupportsTaskType(t.TaskType) {
				out = append(out, mb.AgentID)
			}
		} else if slices.Contains(mb.TaskTypes, t.TaskType) {
			out = append(out, mb.AgentID)
		}
	}
	if len(out) == 0 {
		return nil, wire.Errorf(wire.CodeCapabilityLacking, "no member of group %s declared task type %q", g.GroupID, t.TaskType).
			With("task_type", t.TaskType)
	}
	return out, nil
}

// split divides the list payload[field] into at most n contiguous,
// nearly equal parts and returns each part's payload.
func split(payload wire.JSONValue, field string, n int) ([]wire.JSONValue, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(payload, &obj); err != nil {
		return nil, invalid("payload", "payload must be a JSON object")
	}
	var items []json.RawMessage
	if raw, ok := obj[field]; !ok || json.Unmarshal(raw, &items) != nil || len(items) == 0 {
		return nil, invalid("split_field", "payload.%s must be a non-empty list to split", field)
	}
	n = min(n, len(items))
	out := make([]wire.JSONValue, 0, n)
	for i := range n {
		chunk, err := json.Marshal(items[i*len(items)/n : (i+1)*len(items)/n])
		if err != nil {
			return nil, fmt.Errorf("split: %w", err)
		}
		obj[field] = chunk
		b, err := json.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("split: %w", err)
		}
		out = append(out, b)
	}
	return out, nil
}

// taskMessage handles group:task (a member's request on the owner's
// agent) and group:task_result (an announcement elsewhere).
func (m *Manager) taskMessage(ctx context.Context, from string, msgType wire.MessageType, t *Task) error {
	if err := checkID("group_id", t.GroupID); err != nil {
		return err
	}
	if err := checkID("group_task_id", t.TaskID); err != nil {
		return err
	}
	if m.ownerOf(t.GroupID) == m.me {
		if msgType != wire.MsgGroupTask {
			return wire.Errorf(wire.CodeInvalidParams, "%s comes from a group's owner, and this agent owns group %s", msgType, t.GroupID)
		}
		return m.taskFrom(ctx, from, t)
	}
	if msgType != wire.MsgGroupTaskResult {
		return wire.Errorf(wire.CodeInvalidParams, "this agent does not coordinate group %q", t.GroupID)
	}
	return m.update(ctx, func(tx *store.Tx) error {
		g, err := getGroup(tx, t.GroupID)
		if err != nil {
			m.log.Debug("task result for an unknown group", "group_id", t.GroupID, "from", from)
			return nil
		}
		if err := fromOwner(g, from, msgType); err != nil {
			return err
		}
		if err := m.record(tx, g.GroupID, "task_result:"+t.TaskID, msgType, t.Requester, t); err != nil {
			return err
		}
		return putTask(tx, t)
	})
}

// taskFrom starts a member's group task on the owner's agent.
func (m *Manager) taskFrom(ctx context.Context, from string, req *Task) error {
	if req.Requester != from {
		return denied("%s cannot ask for a group task in the name of %s", from, req.Requester)
	}
	c := &Task{TaskID: req.TaskID, GroupID: req.GroupID, TaskType: req.TaskType, Payload: req.Payload, Mode: req.Mode,
		SplitField: req.SplitField, Aggregate: req.Aggregate, Members: req.Members, TimeoutSeconds: req.TimeoutSeconds,
		Requester: from, CreatedAt: wire.Time{Time: m.now()}}
	if err := checkTask(c); err != nil {
		return err
	}
	var launch *Task
	err := m.update(ctx, func(tx *store.Tx) error {
		launch = nil
		g, err := loadActive(tx, c.GroupID)
		if err != nil {
			return err
		}
		if g.member(from) == nil {
			return denied("%s is not a member of group %s", from, g.GroupID)
		}
		if _, err := getTask(tx, c.GroupID, c.TaskID); err == nil {
			return nil // asked again
		}
		o := *c
		if err := m.prepare(tx, g, &o); err != nil {
			return err
		}
		launch = &o
		return nil
	})
	if err == nil && launch != nil {
		m.launch(launch)
	}
	return err
}

// Task reads a group task as this agent knows it.
func (m *Manager) Task(groupID, taskID string) (*Task, error) {
	var t *Task
	err := m.view(func(tx *store.Tx) error {
		if _, err := getGroup(tx, groupID); err != nil {
			return err
		}
		var err error
		t, err = getTask(tx, groupID, taskID)
		return err
	})
	return t, err
}

// WaitTask returns a group task once it is final, or after d.
func (m *Manager) WaitTask(ctx context.Context, groupID, taskID string, d time.Duration) (*Task, error) {
	m.mu.Lock()
	r := m.runs[groupID+"/"+taskID]
	m.mu.Unlock()
	if r != nil && d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-r.done:
		case <-t.C:
		case <-ctx.Done():
		}
	}
	return m.Task(groupID, taskID)
}

// canonical is a JSON value re-encoded with sorted keys, for comparing
// results.
func canonical(v wire.JSONValue) string {
	var x any
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	if err := d.Decode(&x); err != nil {
		return string(v)
	}
	b, err := json.Marshal(x)
	if err != nil {
		return string(v)
	}
	return string(b)
}

// aggregate computes a finished task's status, result and missing parts.
func aggregate(t *Task) {
	t.Missing, t.Result, t.Agreement, t.Error = nil, nil, 0, ""
	completed := 0
	for _, p := range t.Parts {
		switch p.Status {
		case PartCompleted:
			completed++
		case PartFailed, PartTimedOut:
			t.Missing = append(t.Missing, Missing{Member: p.Member, Part: p.Index, Reason: p.Status, Error: p.Error})
		}
	}
	switch t.Aggregate {
	case AggregateFirst:
		var first *Part
		for i := range t.Parts {
			p := &t.Parts[i]
			if p.Status == PartCompleted && (first == nil || p.FinishedAt.Before(first.FinishedAt.Time)) {
				first = p
			}
		}
		t.Status = TaskCompleted
		if first != nil {
			t.Result = first.Result
		} else {
			t.Status, t.Error = TaskFailed, "no member returned a result"
		}
	case AggregateMajority:
		counts := map[string]int{}
		var best string
		for _, p := range t.Parts {
			if p.Status != PartCompleted {
				continue
			}
			k := canonical(p.Result)
			counts[k]++
			if counts[k] > counts[best] {
				best = k
			}
		}
		t.Agreement = counts[best]
		if 2*t.Agreement > len(t.Parts) {
			t.Status, t.Result = TaskCompleted, wire.JSONValue(best)
		} else {
			t.Status = TaskFailed
			t.Error = fmt.Sprintf("no result was returned by more than half of the %d parts (at most %d agreed)", len(t.Parts), t.Agreement)
		}
	default:
		list := make([]json.RawMessage, len(t.Parts))
		for i, p := range t.Parts {
			list[i] = json.RawMessage("null")
			if p.Status == PartCompleted && len(p.Result) > 0 {
				list[i] = json.RawMessage(p.Result)
			}
		}
		b, _ := json.Marshal(list)
		t.Result = b
		switch {
		case completed == len(t.Parts):
			t.Status = TaskCompleted
		case completed > 0:
			t.Status = TaskPartial
		default:
			t.Status, t.Error = TaskFailed, "no member returned a result"
		}
	}
}
