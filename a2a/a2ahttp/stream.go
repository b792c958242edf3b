package a2ahttp

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/a2a"
	"github.com/synapse-edge/synapse/a2a/a2asrv"
	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/internal/sse"
	"github.com/synapse-edge/synapse/wire"
)

// A2A streams (SendStreamingMessage, SubscribeToTask and their v0.3 names)
// are SSE: each event's data is a JSON-RPC response to the request, its id
// the sequence number of the task event it stands for, so Last-Event-ID
// resumes after it. A fresh stream starts with the task (id = the task's
// sequence when read); then a status update per state change, the result
// artifact at the final state change and a final status update at the
// task's complete event, after which the stream closes. Progress, log and
// error events have no A2A counterpart and are left out.

// maxReloads bounds how often one stream reloads after its subscription
// lagged.
const maxReloads = 1000

// startStream does the request's work, then answers with the stream;
// an error before the stream starts is answered as a JSON-RPC error.
func (h *Handler) startStream(ctx *fasthttp.RequestCtx, p auth.Principal, op a2a.Op, v a2a.Version, req *a2a.Request) error {
	var id string
	var last uint64
	snapshot := true
	if op == a2a.OpStream {
		var sp a2a.SendParams
		if err := a2asrv.Params(req.Params, &sp); err != nil {
			return err
		}
		if sp.Configuration != nil {
			// The stream is what the client waits on.
			f := false
			sp.Configuration.Blocking, sp.Configuration.ReturnImmediately = &f, true
		} else {
			sp.Configuration = &a2a.SendConfiguration{ReturnImmediately: true}
		}
		sub, err := h.srv.Send(ctx, p, v, &sp, nil)
		if err != nil {
			return err
		}
		id = sub.ID
	} else {
		var ip a2a.TaskIDParams
		if err := a2asrv.Params(req.Params, &ip); err != nil {
			return err
		}
		if ip.ID == "" {
			return a2a.Errorf(a2a.CodeInvalidParams, "params.id is required")
		}
		t, err := h.a.Task(ip.ID)
		if err != nil {
			return err
		}
		id = t.ID
		n, resume, err := sse.Resume(ctx, false)
		if err != nil {
			return a2a.Errorf(a2a.CodeInvalidParams, "%s", wire.AsError(err).Message)
		}
		if resume {
			last, snapshot = n, false
		} else if t.Status.Terminal() {
			return a2a.Errorf(a2a.CodeUnsupportedOperation, "task %s is final; get it with GetTask", id)
		}
	}
	header := sse.Header(fasthttp.StatusOK, "text/event-stream; charset=utf-8",
		"Cache-Control: no-cache", "X-Accel-Buffering: no")
	rpcID := append(json.RawMessage(nil), req.ID...)
	h.host.TakeOver(ctx, header, func(w *sse.Writer, done <-chan struct{}) error {
		st := &stream{h: h, w: w, rpcID: rpcID, v: v, id: id, last: last}
		return st.pump(done, snapshot)
	})
	return nil
}

// streamError answers a streaming method's error as the reference
// server does: an event stream whose one event is the JSON-RPC error. A
// rate limit is HTTP 429 with Retry-After, as for every method.
func streamError(ctx *fasthttp.RequestCtx, r *a2a.Response) {
	if rateLimited(r) {
		httpError(ctx, r.Error.Agent, r.ID)
		return
	}
	r.Error = r.Error.WithDetails(time.Now())
	b, err := r.Encode()
	if err != nil {
		b = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"encode error"}}`)
	}
	ctx.Response.Header.Set(fasthttp.HeaderCacheControl, "no-cache")
	answer(ctx, fasthttp.StatusOK, "text/event-stream; charset=utf-8", sse.AppendEvent(nil, "", "", b))
}

type stream struct {
	h     *Handler
	w     *sse.Writer
	rpcID json.RawMessage
	v     a2a.Version
	id    string
	last  uint64
}

func (st *stream) write(seq uint64, x any) error {
	b, err := a2a.NewResponse(st.rpcID, a2a.Wrap(x, st.v)).Encode()
	if err != nil {
		return fmt.Errorf("encode stream event: %w", err)
	}
	if err := st.w.Event(strconv.FormatUint(seq, 10), "", b); err != nil {
		return err
	}
	st.last = seq
	return nil
}

// emit writes what e stands for; end is true after the complete event.
func (st *stream) emit(e *wire.Event) (end bool, err error) {
	switch e.Type {
	case wire.EventStatus:
		var d struct {
			Status wire.Status `json:"status"`
		}
		if err := json.Unmarshal(e.Data, &d); err != nil {
			return false, fmt.Errorf("status event: %w", err)
		}
		t, err := st.h.a.Task(st.id)
		if err != nil {
			return false, err
		}
		if d.Status.Terminal() {
			if au := a2a.ArtifactUpdateOf(t, st.v); au != nil {
				return false, st.write(e.Seq, au)
			}
			st.last = e.Seq
			return false, nil
		}
		at := *t
		if at.Status != d.Status {
			at.Status, at.ErrorCode, at.ErrorMessage, at.MissingFields, at.Human = d.Status, "", "", nil, nil
		}
		at.UpdatedAt = e.At.Time
		return false, st.write(e.Seq, a2a.StatusUpdateOf(&at, st.v))
	case wire.EventComplete:
		t, err := st.h.a.Task(st.id)
		if err != nil {
			return false, err
		}
		return true, st.write(e.Seq, a2a.StatusUpdateOf(t, st.v))
	}
	st.last = e.Seq
	return false, nil
}

func (st *stream) pump(done <-chan struct{}, snapshot bool) error {
	for range maxReloads {
		// Subscribe before reading the store so nothing falls between.
		sub := st.h.a.Subscribe(st.id)
		end, err := st.catchUp(&snapshot)
		if err != nil || end {
			sub.Close()
			if err == nil {
				err = st.w.Flush()
			}
			return err
		}
		if err := st.w.Flush(); err != nil {
			sub.Close()
			return err
		}
		lagged, err := st.follow(done, sub)
		sub.Close()
		if !lagged {
			return err
		}
	}
	return nil
}

// catchUp writes the first task snapshot (once) and the stored events after
// the last one written.
func (st *stream) catchUp(snapshot *bool) (end bool, err error) {
	if *snapshot {
		*snapshot = false
		t, err := st.h.a.Task(st.id)
		if err != nil {
			return false, err
		}
		if err := st.write(t.Seq, a2a.FromTask(t, st.v, nil)); err != nil {
			return false, err
		}
		if t.Status.Terminal() {
			return true, nil
		}
	}
	evs, err := st.h.a.Events(st.id, st.last)
	if err != nil {
		return false, err
	}
	for _, e := range evs {
		if end, err := st.emit(e); err != nil || end {
			return end, err
		}
	}
	t, err := st.h.a.Task(st.id)
	if err != nil {
		return false, err
	}
	return t.Status.Terminal() && t.Seq <= st.last, nil
}

func (st *stream) follow(done <-chan struct{}, sub *agent.Subscription) (lagged bool, err error) {
	return sse.Follow(st.w, done, sub.C, sub.Lagged, func(e *wire.Event) (bool, error) {
		if e.Seq <= st.last {
			return false, nil
		}
		return st.emit(e)
	})
}
