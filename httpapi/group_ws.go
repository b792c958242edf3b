package httpapi

import (
	"encoding/json"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/group"
	"github.com/synapse-edge/synapse/wire"
)

// stream serves GET /group/{id}/messages/stream, a WebSocket for the
// group's members and observers (seed 003 StreamGroupMessages). Every event
// of the group this agent records (messages, joins and leaves, votes
// opened and closed, group tasks) is pushed as a text message holding the
// event as JSON: {"seq","event_id","group_id","type","from","at","payload"}.
// ?after=N first replays the kept events with seq > N (after=0: all of
// them); without it only new events come. A client that falls behind is
// caught up from the store, without gaps while the events are kept.
//
// The stream goes both ways: a text message {"text","body"} from a client
// whose token has tasks:write is sent to the group as from this agent
// (POST /group/{id}/message) and answered with {"sent":{message}} or
// {"error":{...}}; its event then comes like any other. Keep-alive and
// limits are those of GET /messages/stream.
func (g groupAPI) stream(ctx *fasthttp.RequestCtx, p auth.Principal, args []string) error {
	id := args[0]
	if _, err := g.groups.Group(id); err != nil {
		return err
	}
	after, err := afterSeq(ctx, g.groups.LastEvent(id))
	if err != nil {
		return err
	}
	canSend := p.Can(auth.ScopeTasksWrite)
	return g.streams.upgrade(ctx, func(c *websocket.Conn) {
		c.SetReadLimit(wsMaxEnvelope)
		stop := g.streams.startKeepAlive(c)
		defer stop()

		out := make(chan []byte, wsOutQueue)
		wrote := make(chan struct{})
		go func() {
			defer close(wrote)
			broken := false
			for b := range out { // after a write error, drain so senders never block
				if broken {
					continue
				}
				_ = c.SetWriteDeadline(time.Now().Add(wsWriteWait))
				broken = c.WriteMessage(websocket.TextMessage, b) != nil
			}
		}()
		quit := make(chan struct{})
		pushed := make(chan struct{})
		go func() {
			defer close(pushed)
			g.pushEvents(id, after, out, quit)
		}()
		for {
			_, data, err := c.ReadMessage()
			if err != nil {
				break
			}
			out <- g.streamSend(id, canSend, data)
		}
		close(quit)
		<-pushed
		close(out)
		<-wrote
	})
}

// pushEvents sends the group's events after last to out until quit is
// closed or the manager closes.
func (g groupAPI) pushEvents(id string, last uint64, out chan<- []byte, quit <-chan struct{}) {
	send := func(ev group.Event) bool {
		b, err := json.Marshal(ev)
		if err != nil {
			return true
		}
		select {
		case out <- b:
			return true
		case <-quit:
			return false
		}
	}
	for range 1_000_000 { // a new subscription only after lagging
		sub := g.groups.Subscribe(id)
		for range 1000 { // catch up page by page; the log keeps a bounded number
			evs, err := g.groups.Events(id, last, 1000)
			if err != nil {
				sub.Close()
				return
			}
			for _, ev := range evs {
				if !send(ev) {
					sub.Close()
					return
				}
				last = ev.Seq
			}
			if len(evs) < 1000 {
				break
			}
		}
		lagged := false
	follow:
		for {
			select {
			case ev, ok := <-sub.C:
				if !ok {
					lagged = sub.Lagged()
					break follow
				}
				if ev.Seq <= last {
					continue
				}
				if !send(ev) {
					break follow
				}
				last = ev.Seq
			case <-quit:
				break follow
			}
		}
		sub.Close()
		if !lagged {
			return
		}
	}
}

// streamSend handles a message a client sent on the stream.
func (g groupAPI) streamSend(id string, canSend bool, data []byte) []byte {
	fail := func(err error) []byte {
		b, _ := json.Marshal(wire.ErrorBody{Error: wire.AsError(err)})
		return b
	}
	if !canSend {
		return fail(wire.Errorf(wire.CodePermissionDenied, "sending to a group needs the tasks:write scope"))
	}
	var req group.MessageRequest
	if err := wire.CheckUTF8(data); err != nil {
		return fail(wire.Errorf(wire.CodeValUTF8, "message: %v", err))
	}
	if err := json.Unmarshal(data, &req); err != nil {
		return fail(wire.Errorf(wire.CodeMessageFormatInvalid, "send {\"text\":...} or {\"body\":{...}}: %v", err))
	}
	msg, err := g.groups.Send(g.streams.bg, id, req)
	if err != nil {
		return fail(err)
	}
	b, err := json.Marshal(map[string]any{"sent": msg})
	if err != nil {
		return fail(wire.Errorf(wire.CodeInternal, "encode answer: %v", err))
	}
	return b
}
