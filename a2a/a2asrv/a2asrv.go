// Package a2asrv runs the A2A methods on an agent: it decodes a method's
// params, calls the agent and renders the A2A result (package a2a maps
// tasks, states and errors). It knows no transport: package a2a/a2ahttp
// serves it as the JSON-RPC binding on /a2a, with authentication, rate
// limits, the Idempotency-Key and the SSE streams.
package a2asrv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/a2a"
	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/wire"
)

const (
	// sendWait bounds a blocking SendMessage (the sync mode's limit).
	sendWait = 60 * time.Second
	// pageSize is ListTasks' default page size; maxPageSize its limit.
	pageSize    = 50
	maxPageSize = 100
	// listScan bounds the store pages one filtered ListTasks reads.
	listScan = 20
)

// Server runs the methods on one agent.
type Server struct{ a *agent.Agent }

// New returns the methods of a.
func New(a *agent.Agent) *Server { return &Server{a: a} }

// Params decodes a method's params; missing params decode as {}.
func Params(raw json.RawMessage, v any) error {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return a2a.Errorf(a2a.CodeInvalidParams, "params: %v", err)
	}
	return nil
}

// Call runs a method that answers once (not a stream); raw are its
// params. idem, when not nil, is SendMessage's idempotency key (the
// other methods create nothing): replayed is then true when the result
// is the key's stored one, rendered again from the task it answered.
func (s *Server) Call(ctx context.Context, p auth.Principal, op a2a.Op, v a2a.Version, raw json.RawMessage, idem *agent.IdemRequest) (res any, replayed bool, err error) {
	if op == a2a.OpSend {
		var sp a2a.SendParams
		if err := Params(raw, &sp); err != nil {
			return nil, false, err
		}
		sub, err := s.Send(ctx, p, v, &sp, idem)
		switch {
		case err != nil:
			return nil, false, err
		case sub.Sent != nil:
			// Stored as it was sent, before the store kept the task.
			return json.RawMessage(sub.Sent.Body), true, nil
		}
		return SendResult(sub.Task, v, &sp), sub.Replayed, nil
	}
	res, err = s.call(ctx, p, op, v, raw)
	return res, false, err
}

// call runs a method that answers once, SendMessage aside.
func (s *Server) call(ctx context.Context, p auth.Principal, op a2a.Op, v a2a.Version, raw json.RawMessage) (any, error) {
	switch op {
	case a2a.OpGet, a2a.OpCancel:
		var ip a2a.TaskIDParams
		if err := Params(raw, &ip); err != nil {
			return nil, err
		}
		if ip.ID == "" {
			return nil, a2a.Errorf(a2a.CodeInvalidParams, "params.id is required")
		}
		var t *wire.Task
		var err error
		t, err = s.a.Task(ip.ID)
		if err == nil && op == a2a.OpCancel {
			// A2A refuses to cancel any final task, a cancelled one too.
			if t.Status.Terminal() {
				return nil, a2a.Errorf(a2a.CodeTaskNotCancelable, "task %s is %s", t.ID, a2a.State(t.Status, v))
			}
			t, err = s.a.Cancel(ctx, ip.ID)
		}
		if err != nil {
			return nil, err
		}
		return a2a.FromTask(t, v, ip.HistoryLength), nil
	case a2a.OpList:
		var lp a2a.ListParams
		if err := Params(raw, &lp); err != nil {
			return nil, err
		}
		return s.list(v, &lp)
	default:
		var pp a2a.PushParams
		if err := Params(raw, &pp); err != nil {
			return nil, err
		}
		return s.push(ctx, op, v, &pp)
	}
}

// SendResult is SendMessage's result for t.
func SendResult(t *wire.Task, v a2a.Version, sp *a2a.SendParams) any {
	var hl *int
	if sp.Configuration != nil {
		hl = sp.Configuration.HistoryLength
	}
	return a2a.Wrap(a2a.FromTask(t, v, hl), v)
}

// Send submits a message as a task (under the idempotency key idem when
// not nil), or gives a task waiting for information the message's data
// (no task is created: the key is not kept for it). A push config given
// with the message is stored with the task, in the task's own
// transaction.
func (s *Server) Send(ctx context.Context, p auth.Principal, v a2a.Version, sp *a2a.SendParams, idem *agent.IdemRequest) (*agent.Submitted, error) {
	taskType, payload, err := a2a.Submission(sp.Message)
	if err != nil {
		return nil, err
	}
	var push *agent.PushConfig
	if c := sp.Configuration.Push(); c != nil {
		if push, err = s.pushRecord(ctx, "", c, v); err != nil {
			return nil, err
		}
	}
	wait := sendWait
	if !sp.Configuration.Blocks() {
		wait = 0
	}
	if id := sp.Message.TaskID; id != "" {
		t, err := s.cont(ctx, id, payload, push, wait)
		if err != nil {
			return nil, err
		}
		return &agent.Submitted{Task: t}, nil
	}
	if !s.a.SupportsTaskType(taskType) {
		return nil, a2a.Errorf(a2a.CodeUnsupportedOperation, "this agent has no handler for task type %q", taskType)
	}
	req := &wire.SubmitRequest{TaskType: taskType, Payload: payload}
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	if push != nil {
		ctx = agent.WithPushConfig(ctx, push)
	}
	return s.a.Submit(ctx, p, req, agent.SubmitOptions{Wait: wait, Idempotency: idem})
}

// cont answers a message for an existing task: only a task in
// info_needed takes one (its data is the missing information).
func (s *Server) cont(ctx context.Context, id string, payload wire.JSONValue, push *agent.PushConfig, wait time.Duration) (*wire.Task, error) {
	t, err := s.a.Task(id)
	if err != nil {
		return nil, err
	}
	if t.Status != wire.StatusInfoNeeded {
		return nil, a2a.Errorf(a2a.CodeUnsupportedOperation, "task %s is %s and takes no message", id, a2a.State(t.Status, a2a.V03))
	}
	if push != nil {
		push.TaskID = id
		if err := s.a.PutPushConfig(ctx, push); err != nil {
			return nil, err
		}
	}
	if _, err := s.a.ProvideInfo(ctx, id, payload); err != nil {
		return nil, err
	}
	if wait > 0 {
		return s.a.Wait(ctx, id, wait)
	}
	return s.a.Task(id)
}

func (s *Server) list(v a2a.Version, lp *a2a.ListParams) (*a2a.ListResult, error) {
	size := lp.PageSize
	switch {
	case size < 0:
		return nil, a2a.Errorf(a2a.CodeInvalidParams, "pageSize must not be negative")
	case size == 0:
		size = pageSize
	case size > maxPageSize:
		size = maxPageSize
	}
	hl := lp.HistoryLength
	if hl == nil {
		hl = new(int)
	}
	if *hl < 0 {
		return nil, a2a.Errorf(a2a.CodeInvalidParams, "historyLength must not be negative")
	}
	render := func(t *wire.Task) *a2a.Task {
		out := a2a.FromTask(t, v, hl)
		if !lp.IncludeArtifacts {
			out.Artifacts = nil
		}
		return out
	}
	var want []wire.Status
	if lp.Status != "" {
		var ok bool
		if want, ok = a2a.Statuses(lp.Status); !ok {
			return nil, a2a.Errorf(a2a.CodeInvalidParams, "status %q is no A2A task state", lp.Status)
		}
	}
	match := func(t *wire.Task) bool {
		if lp.Status == "" {
			return true
		}
		for _, s := range want {
			if t.Status == s {
				return true
			}
		}
		return false
	}
	res := &a2a.ListResult{Tasks: []*a2a.Task{}, PageSize: size}
	if lp.ContextID != "" {
		// A context is one task here.
		t, err := s.a.Task(lp.ContextID)
		if err != nil || !match(t) || (lp.PageToken != "" && t.ID >= lp.PageToken) {
			if err != nil && wire.AsError(err).Code != wire.CodeTaskNotFound {
				return nil, err
			}
			return res, nil
		}
		res.Tasks, res.TotalSize = append(res.Tasks, render(t)), 1
		return res, nil
	}
	if lp.Status != "" && len(want) == 0 {
		return res, nil // auth-required: no state of ours maps to it
	}
	f := agent.TaskFilter{After: lp.PageToken, Limit: size}
	if len(want) == 1 {
		f.Status = want[0]
	}
	full := false
	for range listScan {
		ts, next, err := s.a.ListTasks(f)
		if err != nil {
			return nil, err
		}
		for i, t := range ts {
			if !match(t) {
				continue
			}
			res.Tasks = append(res.Tasks, render(t))
			if len(res.Tasks) == size {
				if i < len(ts)-1 || next != "" {
					res.NextPageToken = t.ID
				}
				full = true
				break
			}
		}
		if full || next == "" {
			break
		}
		f.After, res.NextPageToken = next, next
	}
	n, err := s.count(lp.Status != "", match, f.Status)
	if err != nil {
		return nil, err
	}
	res.TotalSize = n
	return res, nil
}

// count counts the tasks ListTasks would list over all pages.
func (s *Server) count(filtered bool, match func(*wire.Task) bool, status wire.Status) (int, error) {
	if !filtered {
		return s.a.CountTasks()
	}
	n := 0
	f := agent.TaskFilter{Status: status, Limit: maxPageSize}
	for range listScan {
		ts, next, err := s.a.ListTasks(f)
		if err != nil {
			return 0, err
		}
		for _, t := range ts {
			if match(t) {
				n++
			}
		}
		if next == "" {
			break
		}
		f.After = next
	}
	return n, nil
}

// checkPushURL checks a push notification URL's form, then the agent's
// outbound policy (refused targets are invalid params).
func (s *Server) checkPushURL(ctx context.Context, u string) error {
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" || len(u) > 2048 {
		return a2a.Errorf(a2a.CodeInvalidParams, "the push notification url must be an absolute http or https URL of at most 2048 bytes")
	}
	return s.a.CheckOutboundURL(ctx, "url", u)
}

// pushRecord checks a push config and makes its record (a new id when it
// has none).
func (s *Server) pushRecord(ctx context.Context, taskID string, c *a2a.PushConfig, v a2a.Version) (*agent.PushConfig, error) {
	if err := s.checkPushURL(ctx, c.URL); err != nil {
		return nil, err
	}
	rec := &agent.PushConfig{TaskID: taskID, ID: c.ID, URL: c.URL, Token: c.Token, Auth: c.Authentication,
		CreatedAt: s.a.Clock().Now().UTC()}
	if v == a2a.V03 {
		rec.Version = "0.3"
	}
	if rec.ID == "" {
		rec.ID = uuid.NewString()
	}
	if len(rec.ID) > 256 || strings.IndexByte(rec.ID, 0) >= 0 {
		return nil, a2a.Errorf(a2a.CodeInvalidParams, "the push notification config id must be at most 256 bytes, without NUL")
	}
	return rec, nil
}

// push serves the four push config methods (see agent's a2a_push.go
// for the notifications).
func (s *Server) push(ctx context.Context, op a2a.Op, v a2a.Version, pp *a2a.PushParams) (any, error) {
	taskID, cfgID := pp.TaskID, pp.ID
	if v == a2a.V03 && op != a2a.OpPushCreate {
		taskID, cfgID = pp.ID, pp.ConfigID
	}
	if taskID == "" {
		return nil, a2a.Errorf(a2a.CodeInvalidParams, "the task id is required")
	}
	if _, err := s.a.Task(taskID); err != nil {
		return nil, err
	}
	switch op {
	case a2a.OpPushCreate:
		c := pp.Nested
		if c == nil {
			c = &a2a.PushConfig{ID: pp.ID, URL: pp.URL, Token: pp.Token, Authentication: pp.Authentication}
		}
		rec, err := s.pushRecord(ctx, taskID, c, v)
		if err != nil {
			return nil, err
		}
		if err := s.a.PutPushConfig(ctx, rec); err != nil {
			return nil, err
		}
		return a2a.PushAnswer(rec, v), nil
	case a2a.OpPushGet:
		rec, err := s.a.PushConfig(taskID, cfgID)
		if errors.Is(err, agent.ErrNoPushConfig) {
			return nil, a2a.Errorf(a2a.CodeInvalidParams, "task %s has no push notification config %q", taskID, cfgID)
		}
		if err != nil {
			return nil, err
		}
		return a2a.PushAnswer(rec, v), nil
	case a2a.OpPushList:
		all, err := s.a.PushConfigs(taskID)
		if err != nil {
			return nil, err
		}
		out := make([]*a2a.TaskPushConfig, 0, len(all))
		for _, c := range all {
			out = append(out, a2a.PushAnswer(c, v))
		}
		if v == a2a.V03 {
			return out, nil
		}
		return &a2a.PushListResult{Configs: out}, nil
	default: // OpPushDelete
		if cfgID == "" {
			return nil, a2a.Errorf(a2a.CodeInvalidParams, "the push notification config id is required")
		}
		err := s.a.DeletePushConfig(ctx, taskID, cfgID)
		if errors.Is(err, agent.ErrNoPushConfig) {
			return nil, a2a.Errorf(a2a.CodeInvalidParams, "task %s has no push notification config %q", taskID, cfgID)
		}
		if err != nil {
			return nil, err
		}
		return nil, nil
	}
}
