package a2aclient

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"time"

	"github.com/synapse-edge/synapse/a2a"
	"github.com/synapse-edge/synapse/wire"
)

// callTimeout bounds one GetTask.
const callTimeout = 30 * time.Second

// watch tracks r until its remote task is final; first is the task as
// SendMessage answered it (nil: read it first). A task tracked already is
// left to its tracker.
func (t *Transport) watch(r *a2a.RemoteTask, first *a2a.Task) {
	t.mu.Lock()
	if t.closed || t.watching[r.TaskID] != nil {
		t.mu.Unlock()
		return
	}
	kick := make(chan struct{}, 1)
	t.watching[r.TaskID] = kick
	t.wg.Add(1)
	t.mu.Unlock()
	go func() {
		defer t.wg.Done()
		t.track(r, first, kick)
		t.mu.Lock()
		delete(t.watching, r.TaskID)
		t.mu.Unlock()
	}()
}

// kick makes the tracker of a local task read its remote task now.
func (t *Transport) kick(taskID string) {
	t.mu.Lock()
	ch := t.watching[taskID]
	t.mu.Unlock()
	if ch != nil {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// track reads the remote task until it is final, reporting each change of
// its state, then forgets the record.
func (t *Transport) track(r *a2a.RemoteTask, task *a2a.Task, kick <-chan struct{}) {
	log := t.log.With("task_id", r.TaskID, "peer", r.Peer, "remote_id", r.RemoteID)
	url, err := endpoint(r.URL)
	if err != nil {
		log.Error("tracked task has a bad A2A endpoint; giving it up", "err", err)
		t.forget(r)
		return
	}
	reported := ""
	wait := t.min
	// apply reports the task's state if it changed and says whether the
	// tracking ended (final state reported, local task gone, closing).
	apply := func(task *a2a.Task) bool {
		state := stateName(task.Status.State)
		if state == reported {
			return false
		}
		if err := t.report(t.ctx, r.Peer, r.TaskID, task); err != nil {
			if gone(err) {
				log.Warn("the local task is gone; no longer tracking its remote task", "err", err)
				t.forget(r)
				return true
			}
			if t.ctx.Err() != nil {
				return true
			}
			log.Warn("report the remote task's state", "state", state, "err", err)
			return false
		}
		if final(state) {
			t.forget(r)
			return true
		}
		reported, wait = state, t.min
		return false
	}
	// Changes come by subscription (SubscribeToTask) while the peer
	// streams; reads in between, and polling for a peer that does not.
	streams := true
	for {
		if task == nil {
			task = t.read(url, r, log)
		}
		if task != nil {
			if apply(task) {
				return
			}
			if streams {
				switch t.follow(url, t.bearer(r.Peer), r.RemoteID, task, apply) {
				case followEnded:
					return
				case followUnsupported:
					log.Debug("the peer does not stream the task; polling it")
					streams = false
				}
			}
			task = nil
		}
		timer := time.NewTimer(wait)
		select {
		case <-t.ctx.Done():
			timer.Stop()
			return
		case <-kick:
			timer.Stop()
			wait = t.min
		case <-timer.C:
			wait = min(2*wait, t.max)
		}
	}
}

// read gets the remote task; nil when it could not be read this time. A
// task the peer no longer knows is reported failed.
func (t *Transport) read(url string, r *a2a.RemoteTask, log *slog.Logger) *a2a.Task {
	ctx, cancel := context.WithTimeout(t.ctx, callTimeout)
	defer cancel()
	var got a2a.Task
	zero := 0
	o, rerr := t.c.rpc(ctx, url, t.bearer(r.Peer), "", "GetTask", &a2a.TaskIDParams{ID: r.RemoteID, HistoryLength: &zero}, &got)
	switch {
	case o.Delivered():
		return &got
	case rerr != nil && rerr.Code == a2a.CodeTaskNotFound:
		return &a2a.Task{ID: r.RemoteID, Status: a2a.TaskStatus{State: a2a.StateFailed,
			Message: &a2a.Message{Parts: []a2a.Part{a2a.TextPart("the peer no longer knows task "+r.RemoteID, a2a.V10)}}}}
	}
	log.Debug("read the remote task", "err", o.Err)
	return nil
}

// bearer is the Authorization value for a peer's A2A endpoint ("" for
// none).
func (t *Transport) bearer(peer string) string {
	if t.token != nil {
		if tk := t.token(peer); tk != "" {
			return "Bearer " + tk
		}
	}
	return ""
}

// forget deletes the record of a task whose tracking ended.
func (t *Transport) forget(r *a2a.RemoteTask) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	t.mu.Lock()
	l := t.ledger
	t.mu.Unlock()
	if err := l.DeleteRemoteTask(ctx, r.TaskID); err != nil {
		t.log.Warn("forget a tracked task", "task_id", r.TaskID, "err", err)
	}
}

// gone reports whether a report was refused because the local task is
// not (or no longer) one delegated to that peer.
func gone(err error) bool {
	switch wire.AsError(err).Code {
	case wire.CodeTaskNotFound, wire.CodePermissionDenied:
		return true
	}
	return false
}

// stateName spells an A2A state as v0.3 does (v1.0's TASK_STATE_X too).
func stateName(s string) string {
	s = strings.ToLower(strings.TrimPrefix(s, "TASK_STATE_"))
	return strings.ReplaceAll(s, "_", "-")
}

func final(state string) bool {
	switch state {
	case a2a.StateCompleted, a2a.StateFailed, a2a.StateCanceled, a2a.StateRejected:
		return true
	}
	return false
}

// report gives the Reporter the report that task's state stands for
// (nothing for a state with no counterpart).
func (t *Transport) report(ctx context.Context, peer, taskID string, task *a2a.Task) error {
	text, data := statusParts(task.Status.Message)
	var msgType wire.MessageType
	var payload any
	switch stateName(task.Status.State) {
	case a2a.StateSubmitted:
		msgType, payload = wire.MsgTaskConfirm, &wire.TaskConfirmPayload{TaskID: taskID, Confirmed: true}
	case a2a.StateWorking:
		msgType, payload = wire.MsgTaskStatusUpdate, &wire.TaskStatusUpdatePayload{TaskID: taskID, Status: wire.StatusExecuting, Message: text}
	case a2a.StateInputRequired, a2a.StateAuthRequired:
		var d struct {
			MissingFields []wire.MissingField `json:"missing_fields"`
		}
		_ = json.Unmarshal(data, &d)
		if text == "" {
			text = "the peer needs more information"
		}
		msgType, payload = wire.MsgTaskNeedInfo, &wire.TaskNeedInfoPayload{TaskID: taskID, MissingFields: d.MissingFields, Question: text}
	case a2a.StateCompleted:
		msgType, payload = wire.MsgTaskComplete, &wire.TaskCompletePayload{TaskID: taskID,
			Result: wire.TaskResult{OutputType: "json", Output: result(task)}, Summary: "completed by the peer over A2A"}
	case a2a.StateFailed, a2a.StateRejected:
		var d struct {
			Code        wire.ErrorCode `json:"code"`
			Recoverable bool           `json:"recoverable"`
		}
		_ = json.Unmarshal(data, &d)
		if d.Code == "" {
			d.Code = wire.CodeExecutionFailed
		}
		if text == "" {
			text = "the peer's task is " + stateName(task.Status.State)
		}
		if stateName(task.Status.State) == a2a.StateRejected {
			msgType, payload = wire.MsgTaskReject, &wire.TaskRejectPayload{TaskID: taskID, Reason: wire.Reason{Code: d.Code, Message: text}}
		} else {
			msgType, payload = wire.MsgTaskFailed, &wire.TaskFailedPayload{TaskID: taskID,
				Error: wire.TaskError{Code: d.Code, Message: text, Recoverable: d.Recoverable}}
		}
	case a2a.StateCanceled:
		msgType, payload = wire.MsgTaskAck, &wire.TaskAckPayload{TaskID: taskID, AckedType: wire.MsgTaskCancel, Status: wire.StatusCancelled}
	default:
		return nil
	}
	pl, err := wire.NewJSONPayload(payload)
	if err != nil {
		return err
	}
	return t.rep.ReportFromPeer(ctx, peer, msgType, pl)
}

// statusParts joins the text parts of a status message and returns its
// first data part.
func statusParts(m *a2a.Message) (text string, data json.RawMessage) {
	if m == nil {
		return "", nil
	}
	var texts []string
	for _, p := range m.Parts {
		switch {
		case p.Text != nil:
			texts = append(texts, *p.Text)
		case len(p.Data) > 0 && data == nil:
			data = p.Data
		}
	}
	return strings.Join(texts, "\n"), data
}

// result is the task's result: the data of its "result" artifact (else
// its first artifact), or its text parts as {"text": ...}; null without
// an artifact.
func result(task *a2a.Task) wire.JSONValue {
	if len(task.Artifacts) == 0 {
		return wire.JSONValue("null")
	}
	art := task.Artifacts[0]
	for _, a := range task.Artifacts {
		if a.ArtifactID == a2a.ResultArtifactID {
			art = a
			break
		}
	}
	var texts []string
	for _, p := range art.Parts {
		if len(p.Data) > 0 && json.Valid(p.Data) {
			return wire.JSONValue(p.Data)
		}
		if p.Text != nil {
			texts = append(texts, *p.Text)
		}
	}
	if len(texts) == 0 {
		return wire.JSONValue("null")
	}
	b, _ := json.Marshal(map[string]string{"text": strings.Join(texts, "\n")})
	return b
}
