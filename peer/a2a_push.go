package peer

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/store"
)

// A2A push notifications are rendered by the engine (agent.PushItem, in
// the transaction of the task's change) and queued in the outbox like
// every webhook; this is their delivery.

// deliverA2APush posts a stored notification to its URL through the
// outbound policy's client.
func (o *outbox) deliverA2APush(ctx context.Context, it *store.OutboxItem) *deliveryError {
	var item agent.PushItem
	if err := json.Unmarshal(it.Payload, &item); err != nil {
		return &deliveryError{err: fmt.Errorf("stored a2a push: %w", err), permanent: true}
	}
	h := http.Header{"X-Synapse-Message-Id": {it.ID}}
	for k, v := range item.Header {
		h.Set(k, v)
	}
	r, err := o.n.postWith(ctx, o.n.hooks, it.URL, item.ContentType, item.Body, h)
	return classify(r, err, false)
}
