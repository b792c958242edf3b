package httpapi

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/wire"
)

// sseKeepAlive is how often an idle stream sends a comment line, which also
// finds clients that went away.
const sseKeepAlive = 15 * time.Second

// streamTask serves GET /task/{id}/stream: the task's events as SSE, each
// with its per-task sequence as id. Last-Event-ID (header, or the
// last_event_id query parameter) resumes after that event; the stream closes
// after the complete event.
func (s *Server) streamTask(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	id := args[0]
	t, err := s.a.Task(id)
	if err != nil {
		return err
	}
	last, _, err := sseResume(ctx, true)
	if err != nil {
		return err
	}
	header := httpHeader(fasthttp.StatusOK, "text/event-stream; charset=utf-8",
		"Cache-Control: no-cache", "X-Accel-Buffering: no")
	s.takeOver(ctx, header, func(w *deadlineWriter, done <-chan struct{}) error {
		return s.pumpTask(w, done, t.ID, last)
	})
	return nil
}

// sseResume is where a client resumes an SSE stream: after the event id
// in its Last-Event-ID header or, when fromQuery is set, in the
// last_event_id query parameter (a browser's EventSource cannot set the
// header on its first connection). ok is false when the client named
// none; an id that is not a whole number is invalid_params.
func sseResume(ctx *fasthttp.RequestCtx, fromQuery bool) (last uint64, ok bool, err error) {
	raw := ctx.Request.Header.Peek("Last-Event-ID")
	if len(raw) == 0 && fromQuery {
		raw = ctx.QueryArgs().Peek("last_event_id")
	}
	if len(raw) == 0 {
		return 0, false, nil
	}
	n, valid := parseUint(raw)
	if !valid {
		return 0, false, wire.Errorf(wire.CodeInvalidParams, "Last-Event-ID must be an event id (a whole number)").With("field", "Last-Event-ID")
	}
	return n, true, nil
}

func (s *Server) pumpTask(w *deadlineWriter, done <-chan struct{}, id string, last uint64) error {
	for {
		// Subscribe before reading the store so nothing falls between.
		sub := s.a.Subscribe(id)
		evs, err := s.a.Events(id, last)
		if err != nil {
			sub.Close()
			return err
		}
		for _, e := range evs {
			if err := writeEvent(w, e); err != nil {
				sub.Close()
				return err
			}
			last = e.Seq
			if e.Type == wire.EventComplete {
				sub.Close()
				return w.Flush()
			}
		}
		if err := w.Flush(); err != nil {
			sub.Close()
			return err
		}
		t, err := s.a.Task(id)
		if err != nil || t.Status.Terminal() && t.Seq <= last {
			sub.Close()
			return err
		}
		lagged, err := s.follow(w, done, sub, &last)
		sub.Close()
		if !lagged {
			return err
		}
	}
}

// follow writes live events until the complete event, shutdown, or the
// subscription lagging (then lagged is true and the caller reloads).
func (s *Server) follow(w *deadlineWriter, done <-chan struct{}, sub *agent.Subscription, last *uint64) (lagged bool, err error) {
	return followSSE(w, done, sub.C, sub.Lagged, func(e *wire.Event) (bool, error) {
		if e.Seq <= *last {
			return false, nil
		}
		if err := writeEvent(w, e); err != nil {
			return false, err
		}
		*last = e.Seq
		return e.Type == wire.EventComplete, nil
	})
}

func writeEvent(w *deadlineWriter, e *wire.Event) error {
	data := []byte(e.Data)
	if len(data) == 0 {
		data = []byte("{}")
	}
	var compact json.RawMessage = data
	_, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, compact)
	return err
}
