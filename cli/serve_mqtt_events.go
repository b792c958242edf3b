package cli

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/transport/mqtt"
	"github.com/synapse-edge/synapse/wire"
)

// eventQueue bounds the task events waiting for the broker; beyond it
// new ones are dropped (and counted).
const eventQueue = 4096

// publishTaskEvents publishes, until the agent shuts down, each task's
// status_update and complete events as their JSON (the shape of GET
// /task/{id}/events) on {prefix}/{system_id}/{agent_id}/events. Best
// effort: the events are stored with the task whatever happens here, but
// those that arrive while more than eventQueue wait for the broker are
// dropped, counted in dropped; a consumer sees a gap in a task's seq and
// reads the rest from the API.
func publishTaskEvents(a *agent.Agent, t *mqtt.Transport, log *slog.Logger, dropped *atomic.Uint64) {
	q := make(chan []byte, eventQueue)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer cancel()
		defer close(q)
		for {
			sub := a.SubscribeAll()
			for e := range sub.C {
				if e.Type != wire.EventStatus && e.Type != wire.EventComplete {
					continue
				}
				b, err := wire.JSON.Marshal(e)
				if err != nil {
					dropped.Add(1)
					continue
				}
				select {
				case q <- b:
				default:
					dropped.Add(1)
				}
			}
			if !sub.Lagged() {
				return // the agent shuts down
			}
			log.Warn("mqtt: task events fell behind; some were not published")
		}
	}()
	go func() {
		for b := range q {
			if err := t.PublishEvent(ctx, b); err != nil {
				dropped.Add(1)
			}
		}
	}()
	go func() {
		<-a.Done()
		cancel()
	}()
}
