package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/a2a"
	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/wire"
)

// The A2A JSON-RPC 2.0 binding (see package a2a for the mapping). POST /a2a
// takes one JSON-RPC request per HTTP request, with the bearer token of
// every route (tasks:read; tasks:write for the methods that change
// something); batches (a JSON array) are refused with -32600. Answers are
// HTTP 200 with a JSON-RPC response, or an SSE stream for
// SendStreamingMessage and SubscribeToTask (an error before the stream
// starts is the stream's one event, as the reference server answers it).
// Authentication failures are HTTP 401/403 and a rate limit HTTP 429 with
// Retry-After, as on every route, but with a JSON-RPC error body (-31401,
// -31403, -32603 RATE_LIMITED) that the SDKs decode. SendMessage honours
// an Idempotency-Key header as every creating route does (see
// a2aSendIdempotent). Push notification
// configs are delivered as A2A events by the agent (agent/a2a_push.go,
// queued and sent by the peer network).
const (
	a2aPath       = "/a2a"
	agentCardPath = "/.well-known/agent-card.json"
	// a2aWait bounds a blocking SendMessage (the sync mode's limit).
	a2aWait = 60 * time.Second
	// a2aPageSize is ListTasks' default page size; a2aMaxPageSize its limit.
	a2aPageSize    = 50
	a2aMaxPageSize = 100
	// a2aListScan bounds the store pages one filtered ListTasks reads.
	a2aListScan = 20
)

// a2aRoute serves the A2A paths, outside the API prefix.
func (s *Server) a2aRoute(ctx *fasthttp.RequestCtx, path string) error {
	method := string(ctx.Method())
	if path == agentCardPath {
		if method != fasthttp.MethodGet && method != fasthttp.MethodHead {
			return wire.Errorf(wire.CodeMethodNotAllowed, "%s is not allowed on %s", method, path)
		}
		return s.agentCard(ctx)
	}
	if method != fasthttp.MethodPost {
		return wire.Errorf(wire.CodeMethodNotAllowed, "%s is not allowed on %s", method, path)
	}
	p, err := s.authorize(ctx, agent.ScopeTasksRead)
	if err != nil {
		// The HTTP status says it; the body is a JSON-RPC error so that
		// the SDKs, which read an error body as JSON-RPC, decode it.
		a2aHTTPError(ctx, err, nil)
		return nil
	}
	release, err := s.readBody(ctx, false)
	if err != nil {
		return err
	}
	defer release()
	return s.a2aRPC(ctx, p)
}

// a2aHTTPError answers an authentication or authorization failure, or a
// rate limit: the TPError's HTTP status (401, 403, 429 with Retry-After),
// a JSON-RPC error body.
func a2aHTTPError(ctx *fasthttp.RequestCtx, err error, id json.RawMessage) {
	we := wire.AsError(err)
	switch we.Code {
	case wire.CodeUnauthorized:
		ctx.Response.Header.Set(fasthttp.HeaderWWWAuthenticate, `Bearer realm="synapse"`)
	case wire.CodeRateLimited:
		ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, "1")
	}
	b, _ := a2a.NewErrorResponse(id, a2a.ErrorFrom(err).WithDetails(time.Now())).Encode()
	writeRaw(ctx, we.Status(), wire.ContentJSON, b)
}

// rateLimited reports whether r is the agent's rate_limited refusal.
func rateLimited(r *a2a.Response) bool {
	return r.Error != nil && r.Error.Agent != nil && r.Error.Agent.Code == wire.CodeRateLimited
}

// writeRPC answers r: HTTP 200, except a rate limit, which is HTTP 429
// with Retry-After, as on every route (the JSON-RPC error is the body).
func writeRPC(ctx *fasthttp.RequestCtx, r *a2a.Response) {
	if rateLimited(r) {
		a2aHTTPError(ctx, r.Error.Agent, r.ID)
		return
	}
	if r.Error != nil {
		r.Error = r.Error.WithDetails(time.Now())
	}
	b, err := r.Encode()
	if err != nil {
		b, _ = a2a.NewErrorResponse(r.ID, a2a.Errorf(a2a.CodeInternal, "encode result: %v", err).WithDetails(time.Now())).Encode()
	}
	writeRaw(ctx, fasthttp.StatusOK, wire.ContentJSON, b)
}

func (s *Server) a2aRPC(ctx *fasthttp.RequestCtx, p agent.Principal) error {
	body := bytes.TrimSpace(ctx.PostBody())
	if len(body) > 0 && body[0] == '[' {
		writeRPC(ctx, a2a.NewErrorResponse(nil, a2a.Errorf(a2a.CodeInvalidRequest, "batch requests are not supported")))
		return nil
	}
	var req a2a.Request
	if err := wire.CheckUTF8(body); err != nil {
		writeRPC(ctx, a2a.NewErrorResponse(nil, a2a.Errorf(a2a.CodeParseError, "the body is not a JSON-RPC request: %v", err)))
		return nil
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeRPC(ctx, a2a.NewErrorResponse(nil, a2a.Errorf(a2a.CodeParseError, "the body is not a JSON-RPC request: %v", err)))
		return nil
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		writeRPC(ctx, a2a.NewErrorResponse(req.ID, a2a.Errorf(a2a.CodeInvalidRequest, `a request needs "jsonrpc": "2.0" and a method`)))
		return nil
	}
	op, v, ok := a2a.Method(req.Method)
	if !ok {
		writeRPC(ctx, a2a.NewErrorResponse(req.ID, a2a.Errorf(a2a.CodeMethodNotFound, "method %q is not supported", req.Method)))
		return nil
	}
	if op.Writes() && !p.Can(agent.ScopeTasksWrite) {
		a2aHTTPError(ctx, wire.Errorf(wire.CodePermissionDenied, "this token lacks the %q scope", agent.ScopeTasksWrite).
			With("scope", agent.ScopeTasksWrite), req.ID)
		return nil
	}
	if op.Streaming() {
		if err := s.a2aStartStream(ctx, p, op, v, &req); err != nil {
			// As the reference server: a stream's error is an event of
			// the stream.
			a2aStreamError(ctx, a2a.NewErrorResponse(req.ID, a2a.ErrorFrom(err)))
		}
		return nil
	}
	if key := ctx.Request.Header.Peek("Idempotency-Key"); len(key) > 0 && op == a2a.OpSend {
		return s.a2aSendIdempotent(ctx, p, v, &req, string(key))
	}
	res, err := s.a2aCall(ctx, p, op, v, req.Params)
	if err != nil {
		writeRPC(ctx, a2a.NewErrorResponse(req.ID, a2a.ErrorFrom(err)))
		return nil
	}
	writeRPC(ctx, a2a.NewResponse(req.ID, res))
	return nil
}

// params decodes a method's params; missing params decode as {}.
func params(raw json.RawMessage, v any) error {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return a2a.Errorf(a2a.CodeInvalidParams, "params: %v", err)
	}
	return nil
}

func (s *Server) a2aCall(ctx context.Context, p agent.Principal, op a2a.Op, v a2a.Version, raw json.RawMessage) (any, error) {
	switch op {
	case a2a.OpSend:
		var sp a2a.SendParams
		if err := params(raw, &sp); err != nil {
			return nil, err
		}
		t, err := s.a2aSend(ctx, p, v, &sp, nil)
		if err != nil {
			return nil, err
		}
		return sendResult(t, v, &sp), nil
	case a2a.OpGet, a2a.OpCancel:
		var ip a2a.TaskIDParams
		if err := params(raw, &ip); err != nil {
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
		if err := params(raw, &lp); err != nil {
			return nil, err
		}
		return s.a2aList(v, &lp)
	default:
		var pp a2a.PushParams
		if err := params(raw, &pp); err != nil {
			return nil, err
		}
		return s.a2aPush(ctx, op, v, &pp)
	}
}

// sendResult is SendMessage's result for t.
func sendResult(t *wire.Task, v a2a.Version, sp *a2a.SendParams) any {
	var hl *int
	if sp.Configuration != nil {
		hl = sp.Configuration.HistoryLength
	}
	return a2a.Wrap(a2a.FromTask(t, v, hl), v)
}

// submitFunc submits a task, waiting up to wait for its outcome.
type submitFunc func(ctx context.Context, req *wire.SubmitRequest, wait time.Duration) (*wire.Task, error)

// a2aSendIdempotent is SendMessage with an Idempotency-Key header, under
// the rules of every route (agent/idempotency.go): the same key with the
// same method and params (the JSON-RPC id may differ) answers the stored
// result again, with Idempotent-Replayed: true, and creates no second
// task; with other params it is idempotency_key_reused; while the first is
// in flight, a conflict. A message for an existing task (taskId) does not
// create one: the key is not kept for it.
func (s *Server) a2aSendIdempotent(ctx *fasthttp.RequestCtx, p agent.Principal, v a2a.Version, req *a2a.Request, key string) error {
	var sp a2a.SendParams
	if err := params(req.Params, &sp); err != nil {
		writeRPC(ctx, a2a.NewErrorResponse(req.ID, a2a.ErrorFrom(err)))
		return nil
	}
	h := sha256.New()
	h.Write([]byte(req.Method))
	h.Write([]byte{0})
	h.Write(req.Params)
	ir := agent.IdemRequest{Scope: p.ID, Key: key, Hash: hex.EncodeToString(h.Sum(nil))}
	var replayed []byte
	t, err := s.a2aSend(ctx, p, v, &sp, func(ctx context.Context, sr *wire.SubmitRequest, wait time.Duration) (*wire.Task, error) {
		t, ans, again, err := s.a.SubmitIdempotent(ctx, p, sr, ir, wait, func(t *wire.Task) *agent.IdemAnswer {
			b, _ := json.Marshal(sendResult(t, v, &sp))
			return &agent.IdemAnswer{Status: fasthttp.StatusOK, ContentType: wire.ContentJSON, Body: b}
		})
		if again {
			replayed = ans.Body
		}
		return t, err
	})
	switch {
	case err != nil:
		writeRPC(ctx, a2a.NewErrorResponse(req.ID, a2a.ErrorFrom(err)))
	case replayed != nil:
		ctx.Response.Header.Set("Idempotent-Replayed", "true")
		writeRPC(ctx, a2a.NewResponse(req.ID, json.RawMessage(replayed)))
	default:
		writeRPC(ctx, a2a.NewResponse(req.ID, sendResult(t, v, &sp)))
	}
	return nil
}

// a2aSend submits a message as a task (through submit when not nil), or
// gives a task waiting for information the message's data. A push config
// given with the message is stored with the task, in the task's own
// transaction.
func (s *Server) a2aSend(ctx context.Context, p agent.Principal, v a2a.Version, sp *a2a.SendParams, submit submitFunc) (*wire.Task, error) {
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
	wait := a2aWait
	if !sp.Configuration.Blocks() {
		wait = 0
	}
	if id := sp.Message.TaskID; id != "" {
		return s.a2aContinue(ctx, id, payload, push, wait)
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
	if submit != nil {
		return submit(ctx, req, wait)
	}
	if wait > 0 {
		return s.a.SubmitWait(ctx, p, req, nil, wait)
	}
	return s.a.Submit(ctx, p, req, nil)
}

// a2aContinue answers a message for an existing task: only a task in
// info_needed takes one (its data is the missing information).
func (s *Server) a2aContinue(ctx context.Context, id string, payload wire.JSONValue, push *agent.PushConfig, wait time.Duration) (*wire.Task, error) {
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

func (s *Server) a2aList(v a2a.Version, lp *a2a.ListParams) (*a2a.ListResult, error) {
	size := lp.PageSize
	switch {
	case size < 0:
		return nil, a2a.Errorf(a2a.CodeInvalidParams, "pageSize must not be negative")
	case size == 0:
		size = a2aPageSize
	case size > a2aMaxPageSize:
		size = a2aMaxPageSize
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
	for range a2aListScan {
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
	n, err := s.a2aCount(lp.Status != "", match, f.Status)
	if err != nil {
		return nil, err
	}
	res.TotalSize = n
	return res, nil
}

// a2aCount counts the tasks ListTasks would list over all pages.
func (s *Server) a2aCount(filtered bool, match func(*wire.Task) bool, status wire.Status) (int, error) {
	if !filtered {
		return s.a.CountTasks()
	}
	n := 0
	f := agent.TaskFilter{Status: status, Limit: a2aMaxPageSize}
	for range a2aListScan {
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

// a2aPush serves the four push config methods (see agent's a2a_push.go
// for the notifications).
func (s *Server) a2aPush(ctx context.Context, op a2a.Op, v a2a.Version, pp *a2a.PushParams) (any, error) {
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
