package httpapi

import (
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/internal/sse"
	"github.com/synapse-edge/synapse/wire"
)

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
	last, resumed, err := sse.Resume(ctx, true)
	if err != nil {
		return err
	}
	if resumed && t.Status.Terminal() && t.Seq <= last {
		// The client has the finished task's last event: 204 is the WHATWG
		// EventSource's signal to stop reconnecting (every browser would
		// otherwise come back every few seconds, forever).
		ctx.SetStatusCode(fasthttp.StatusNoContent)
		return nil
	}
	header := sse.Header(fasthttp.StatusOK, "text/event-stream; charset=utf-8",
		"Cache-Control: no-cache", "X-Accel-Buffering: no")
	s.streams.takeOver(ctx, header, func(w *sse.Writer, done <-chan struct{}) error {
		return s.pumpTask(w, done, t.ID, last)
	})
	return nil
}

func (s *Server) pumpTask(w *sse.Writer, done <-chan struct{}, id string, last uint64) error {
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
func (s *Server) follow(w *sse.Writer, done <-chan struct{}, sub *agent.Subscription, last *uint64) (lagged bool, err error) {
	return sse.Follow(w, done, sub.C, sub.Lagged, func(e *wire.Event) (bool, error) {
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

func writeEvent(w *sse.Writer, e *wire.Event) error {
	data := []byte(e.Data)
	if len(data) == 0 {
		data = []byte("{}")
	}
	return w.Event(strconv.FormatUint(e.Seq, 10), string(e.Type), data)
}
