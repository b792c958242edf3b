package httpapi

import (
	"bytes"
	"log/slog"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/wire"
)

// maxWait bounds POST /task?wait=S (SPEC §5.2).
const maxWait = 60

func (s *Server) submit(ctx *fasthttp.RequestCtx, p auth.Principal, _ []string) error {
	var req wire.SubmitRequest
	if err := decode(ctx, &req); err != nil {
		return err
	}
	return s.submitRequest(ctx, p, &req)
}

// submitRequest runs the submit flow shared by the JSON/msgpack and the
// multipart routes: idempotency, the optional sync wait, the answer.
func (s *Server) submitRequest(ctx *fasthttp.RequestCtx, p auth.Principal, req *wire.SubmitRequest) error {
	wait, err := queryInt(ctx, "wait", 0, 0, maxWait)
	if err != nil {
		return err
	}
	o := agent.SubmitOptions{Wait: time.Duration(wait) * time.Second}
	if key := idemKey(ctx, req.IdempotencyKey); key != "" {
		r := idemRequest(ctx, p, key)
		o.Idempotency = &r
	}
	sub, err := s.a.Submit(ctx, p, req, o)
	if err != nil {
		return err
	}
	if sub.Sent != nil {
		// Stored as it was sent, before the store kept the task.
		writeAnswer(ctx, sub.Sent, true)
		return nil
	}
	t := sub.Task
	// The answer: 200 with the final task in the sync mode, else 201.
	status, v := fasthttp.StatusCreated, any(submitResponse(t))
	if wait > 0 && t.Status.Terminal() {
		status, v = fasthttp.StatusOK, t.StatusResponse(true)
	}
	ans, err := encodeAnswer(ctx, status, v)
	if err != nil {
		return err
	}
	ans.TaskID = t.ID
	if wait > 0 && t.Status.Terminal() && !sub.Replayed {
		ctx.Response.Header.Set(fasthttp.HeaderETag, t.ETag())
	} else if !sub.Replayed {
		ctx.Response.Header.Set(fasthttp.HeaderLocation, wire.APIPrefix+"/task/"+t.ID)
	}
	if s.log.Enabled(ctx, slog.LevelDebug) && !sub.Replayed {
		s.log.Debug("task submitted", "task_id", t.ID, "task_type", t.Type, "status", t.Status, "principal", p.Name)
	}
	writeAnswer(ctx, ans, sub.Replayed)
	return nil
}

func submitResponse(t *wire.Task) *wire.SubmitResponse {
	msg := "task accepted"
	if t.Status == wire.StatusInfoNeeded {
		msg = "task needs more information: see missing_fields on GET /task/" + t.ID
	}
	return &wire.SubmitResponse{TaskID: t.ID, Status: t.Status, Message: msg}
}

func (s *Server) getTask(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	t, err := s.a.Task(args[0])
	if err != nil {
		return err
	}
	ctx.Response.Header.Set(fasthttp.HeaderETag, t.ETag())
	write(ctx, fasthttp.StatusOK, t.StatusResponse(true))
	return nil
}

func (s *Server) getTaskStatus(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	t, err := s.a.Task(args[0])
	if err != nil {
		return err
	}
	etag := t.ETag()
	ctx.Response.Header.Set(fasthttp.HeaderETag, etag)
	if inm := ctx.Request.Header.Peek(fasthttp.HeaderIfNoneMatch); len(inm) > 0 && etagMatch(inm, etag) {
		ctx.SetStatusCode(fasthttp.StatusNotModified)
		return nil
	}
	write(ctx, fasthttp.StatusOK, t.StatusResponse(false))
	return nil
}

// etagMatch implements If-None-Match: a list of tags or "*".
func etagMatch(header []byte, etag string) bool {
	for _, part := range bytes.Split(header, []byte(",")) {
		part = bytes.TrimPrefix(bytes.TrimSpace(part), []byte("W/"))
		if string(part) == "*" || string(part) == etag {
			return true
		}
	}
	return false
}

func (s *Server) listTasks(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	size, err := queryInt(ctx, "page_size", agent.DefaultTaskPageSize, 1, agent.MaxTaskPageSize)
	if err != nil {
		return err
	}
	q := ctx.QueryArgs()
	list, err := s.a.TaskPage(agent.TaskPageQuery{Status: wire.Status(q.Peek("status")), TaskType: string(q.Peek("task_type")),
		PageToken: string(q.Peek("page_token")), PageSize: size})
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, list)
	return nil
}

func (s *Server) cancelTask(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	t, err := s.a.Cancel(ctx, args[0])
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, t.StatusResponse(false))
	return nil
}

func (s *Server) provideInfo(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	var body struct {
		Fields wire.JSONValue `json:"fields" msgpack:"fields"`
	}
	if err := decode(ctx, &body); err != nil {
		return err
	}
	if len(body.Fields) == 0 || string(body.Fields) == "{}" {
		return wire.Errorf(wire.CodeInvalidParams, `give the missing fields as {"fields": {...}}`).With("field", "fields")
	}
	t, err := s.a.ProvideInfo(ctx, args[0], body.Fields)
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, t.StatusResponse(false))
	return nil
}

// decide serves POST /task/{id}/decision: a person's decision on a task in
// need_human, {"action": "approve"|"reject"|"modify", "approved_fields",
// "rejection_reason", "notes"}.
func (s *Server) decide(ctx *fasthttp.RequestCtx, p auth.Principal, args []string) error {
	var req agent.DecisionRequest
	if err := decode(ctx, &req); err != nil {
		return err
	}
	if s.hil != nil {
		// The escalation levels' reviewer scopes apply here too.
		if _, err := s.hil.Decide(ctx, p, args[0], req); err != nil {
			return err
		}
		t, err := s.a.Task(args[0])
		if err != nil {
			return err
		}
		write(ctx, fasthttp.StatusOK, t.StatusResponse(false))
		return nil
	}
	t, err := s.a.Decide(ctx, p, args[0], req)
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, t.StatusResponse(false))
	return nil
}

func parseUint(b []byte) (uint64, bool) {
	n, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	return n, err == nil
}
