package agent

import (
	"context"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// SetCallbackURL points the webhook callback of a task that is not yet
// final at url (an absolute http or https URL); the callback is queued in
// the durable outbox when the task reaches a final state, as for a
// callback_url given at submission. The change is recorded as a log event.
// A final task is returned unchanged: its callback, if any, was already
// queued.
func (a *Agent) SetCallbackURL(ctx context.Context, id, url string) (*wire.Task, error) {
	if url != "" {
		if err := a.needNetwork("callback_url"); err != nil {
			return nil, err
		}
		if err := a.outbound.CheckURL(ctx, "callback_url", url); err != nil {
			return nil, err
		}
	}
	e := a.eng
	r := e.live(id)
	if r == nil {
		return e.get(id)
	}
	err := e.apply(r, true, func(t *wire.Task, now time.Time) ([]*wire.Event, error) {
		if t.Status.Terminal() || t.CallbackURL == url {
			return nil, nil
		}
		t.CallbackURL = url
		return []*wire.Event{e.newEvent(t, wire.EventLog, now, map[string]any{"task_id": t.ID, "line": "callback url changed"})}, nil
	})
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return e.get(id)
}

// CheckOutboundURL checks a client-given URL (callback_url, an A2A push
// notification URL; field names it in the 400) against the agent's
// outbound policy (package outbound).
func (a *Agent) CheckOutboundURL(ctx context.Context, field, raw string) error {
	return a.outbound.CheckURL(ctx, field, raw)
}
