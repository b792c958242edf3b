package httpapi

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/hil"
	"github.com/synapse-edge/synapse/internal/sse"
	"github.com/synapse-edge/synapse/wire"
)

// Human-in-the-loop routes (SPEC §9), served when Options.HIL is set:
//
//	GET  /hil                  pending requests, most urgent first;
//	                           ?all=true lists every stored request, newest
//	                           first, with page_size and page_token
//	GET  /hil/stream           SSE: "event: hil" with the request and its
//	                           change; "event: reset" when a resumed stream
//	                           lost events (reload the list)
//	GET  /hil/{task_id}        one request with its audit trail
//	POST /hil/{task_id}/decision
//	     {"action":"approve|reject|modify","approved_fields":{},
//	      "rejection_reason":"","notes":""}; "escalate" hands the
//	     request to the next level's reviewers without deciding
//
// Reading needs tasks:read or a reviewers scope of some level; deciding
// needs the reviewers scope of the request's current level (or admin).

// hilAPI serves the human-in-the-loop routes. They need no token scope of
// the route table: viewer checks the token against the manager's levels.
type hilAPI struct {
	hil   *hil.Manager // nil: the routes answer 503
	clock agent.Clock
	// authorize is the server's token check.
	authorize func(ctx *fasthttp.RequestCtx, scope auth.Scope) (auth.Principal, error)
	streams   *streamer
}

func (h hilAPI) routes() []route {
	return []route{
		{"GET", seg("hil"), "", h.list},
		{"GET", seg("hil/stream"), "", h.stream},
		{"GET", seg("hil/*"), "", h.get},
		{"POST", seg("hil/*/decision"), "", h.decide},
	}
}

// hilList is the answer of GET /hil.
type hilList struct {
	Requests      []*hil.Request `json:"requests" msgpack:"requests"`
	NextPageToken string         `json:"next_page_token" msgpack:"next_page_token"`
	// ServerTime lets a console count deadlines down on the agent's clock.
	ServerTime string `json:"server_time" msgpack:"server_time"`
}

// viewer authenticates a request that reads requests.
func (h hilAPI) viewer(ctx *fasthttp.RequestCtx) (auth.Principal, error) {
	if h.hil == nil {
		return auth.Principal{}, wire.Errorf(wire.CodeAgentNotReady, "human-in-the-loop is not running on this server")
	}
	// authorize answers the principal along with a permission error, so a
	// reviewer without tasks:read still gets here.
	p, err := h.authorize(ctx, auth.ScopeTasksRead)
	if err != nil && wire.AsError(err).Code != wire.CodePermissionDenied {
		return p, err
	}
	if !h.hil.CanView(p) {
		return p, wire.Errorf(wire.CodePermissionDenied, "reading requests needs tasks:read or a reviewers scope (hil:l1, hil:l2, hil:l3)")
	}
	return p, nil
}

func (h hilAPI) list(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	if _, err := h.viewer(ctx); err != nil {
		return err
	}
	out := hilList{Requests: []*hil.Request{}}
	all := string(ctx.QueryArgs().Peek("all"))
	switch all {
	case "", "false", "0":
		if err := h.hil.Sync(ctx); err != nil {
			return err
		}
		out.Requests = h.hil.Pending()
	case "true", "1":
		size, err := queryInt(ctx, "page_size", 50, 1, 1000)
		if err != nil {
			return err
		}
		reqs, next, err := h.hil.List(string(ctx.QueryArgs().Peek("page_token")), size)
		if err != nil {
			return err
		}
		if reqs != nil {
			out.Requests = reqs
		}
		out.NextPageToken = next
	default:
		return wire.Errorf(wire.CodeInvalidParams, "all must be true or false").With("field", "all")
	}
	out.ServerTime = wire.FormatTime(h.clock.Now())
	write(ctx, fasthttp.StatusOK, out)
	return nil
}

func (h hilAPI) get(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	if _, err := h.viewer(ctx); err != nil {
		return err
	}
	id, err := url.PathUnescape(args[0])
	if err != nil {
		return wire.Errorf(wire.CodeInvalidParams, "bad task id in path")
	}
	r, err := h.hil.Get(ctx, id)
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, r)
	return nil
}

func (h hilAPI) decide(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	// A principal that may not read holds none of the levels' scopes:
	// Decide refuses it, naming the scope the request's level needs.
	p, err := h.viewer(ctx)
	if err != nil && wire.AsError(err).Code != wire.CodePermissionDenied {
		return err
	}
	id, err := url.PathUnescape(args[0])
	if err != nil {
		return wire.Errorf(wire.CodeInvalidParams, "bad task id in path")
	}
	var req agent.DecisionRequest
	if err := decode(ctx, &req); err != nil {
		return err
	}
	r, err := h.hil.Decide(ctx, p, id, req)
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, r)
	return nil
}

// stream serves GET /hil/stream. Last-Event-ID (or last_event_id)
// resumes after that event from the manager's memory; when that is no
// longer possible the stream starts with "event: reset".
func (h hilAPI) stream(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	if _, err := h.viewer(ctx); err != nil {
		return err
	}
	last, resume, err := sse.Resume(ctx, true)
	if err != nil {
		return err
	}
	// Subscribe before answering so that nothing falls between the
	// answer and a list the client loads once it has it.
	sub, replay, ok := h.hil.Subscribe(last, resume)
	header := sse.Header(fasthttp.StatusOK, "text/event-stream; charset=utf-8",
		"Cache-Control: no-cache", "X-Accel-Buffering: no")
	h.streams.takeOver(ctx, header, func(w *sse.Writer, done <-chan struct{}) error {
		defer func() { sub.Close() }()
		if !ok {
			if err := writeHILReset(w); err != nil {
				return err
			}
		}
		for _, ev := range replay {
			if err := writeHILEvent(w, ev); err != nil {
				return err
			}
			last = ev.ID
		}
		if err := w.Flush(); err != nil {
			return err
		}
		for range 1_000_000 { // a new subscription only after lagging
			lagged, err := h.follow(w, done, sub, &last)
			if !lagged || err != nil {
				return err
			}
			sub.Close()
			sub, replay, ok = h.hil.Subscribe(last, true)
			if !ok {
				if err := writeHILReset(w); err != nil {
					return err
				}
			}
			for _, ev := range replay {
				if err := writeHILEvent(w, ev); err != nil {
					return err
				}
				last = ev.ID
			}
		}
		return nil
	})
	return nil
}

// follow writes events until shutdown, the manager closing, or the
// subscription lagging (then lagged is true).
func (h hilAPI) follow(w *sse.Writer, done <-chan struct{}, sub *hil.Subscription, last *uint64) (lagged bool, err error) {
	return sse.Follow(w, done, sub.C, sub.Lagged, func(ev hil.Event) (bool, error) {
		if err := writeHILEvent(w, ev); err != nil {
			return false, err
		}
		*last = ev.ID
		return false, nil
	})
}

func writeHILEvent(w *sse.Writer, ev hil.Event) error {
	data, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode hil event: %w", err)
	}
	return w.Event(strconv.FormatUint(ev.ID, 10), "hil", data)
}

func writeHILReset(w *sse.Writer) error {
	return w.Event("", "reset", []byte(`{"reason":"events were lost; reload the requests"}`))
}
