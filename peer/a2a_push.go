package peer

import (
	"context"
	"encoding/json"
	"fmt"
	"net/textproto"
	"strings"

	"github.com/synapse-edge/synapse/a2a"
	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// A2A push notifications. A task's A2A push configs (store.PushConfig) are
// stored with the task; every change of the task's A2A state reaches Push
// (from the engine, in the transaction of the change) and is queued in
// the durable outbox for each config's URL, so notifications survive
// restarts and are retried like every webhook. A v1.0 config gets a StreamResponse per event, as the reference
// servers send them: {"task"} when the task is created with the config,
// {"statusUpdate"} per A2A state change, {"artifactUpdate"} with the result
// before the final status; Content-Type application/a2a+json. A v0.3
// config gets the task (kind "task") as it is after each of those changes
// (with its artifacts once final), application/json.
// The config's token rides in X-A2A-Notification-Token (and in
// A2A-Notification-Token, the header a2a-go's sender uses); its
// authentication ({scheme, credentials}, or v0.3's {schemes,
// credentials}) becomes the Authorization header.

// A2APushType is the outbox Type of an A2A push notification: the queue
// delivers the items of this type through deliverA2APush, the delivery
// the network gives it for them (outbox.Options.Deliver).
const A2APushType = "a2a_push"

// a2aPushItem is the stored form of one notification.
type a2aPushItem struct {
	ContentType string            `json:"content_type"`
	Header      map[string]string `json:"header,omitempty"`
	Body        json.RawMessage   `json:"body"`
}

// Push queues, inside tx, the notifications of the change of a task from
// prev (nil: the task is being created) to next for each of its push
// configs (the engine calls it for the tasks that have some).
func (n *Network) Push(tx *store.Tx, prev, next *wire.Task, cfgs []*store.PushConfig) error {
	for _, c := range cfgs {
		v := a2a.V10
		if c.Version == "0.3" {
			v = a2a.V03
		}
		for _, ev := range a2aPushEvents(prev, next, v) {
			item, err := pushItem(c, v, ev)
			if err != nil {
				return err
			}
			if err := n.Enqueue(tx, agent.Outgoing{URL: c.URL, Type: A2APushType, Payload: item}); err != nil {
				return err
			}
		}
	}
	return nil
}

// a2aPushEvents are the events of the change from prev to next in version
// v (see the comment at the top).
func a2aPushEvents(prev, next *wire.Task, v a2a.Version) []any {
	added := next.History
	last := ""
	if prev != nil {
		if len(prev.History) <= len(next.History) {
			added = next.History[len(prev.History):]
		} else {
			added = nil
		}
		last = a2a.State(prev.Status, v)
	}
	var out []any
	for i, tr := range added {
		st := a2a.State(tr.Status, v)
		at := *next
		if tr.Status != next.Status || i < len(added)-1 {
			at.Status, at.ErrorCode, at.ErrorMessage, at.MissingFields, at.Human = tr.Status, "", "", nil, nil
			at.UpdatedAt = tr.At.Time
		}
		switch {
		case st == last && !tr.Status.Terminal() && !(prev == nil && i == 0):
		case v == a2a.V03:
			out = append(out, a2a.FromTask(&at, v, new(int)))
		case prev == nil && i == 0:
			out = append(out, a2a.Wrap(a2a.FromTask(&at, v, new(int)), v))
		default:
			if tr.Status.Terminal() {
				if au := a2a.ArtifactUpdateOf(next, v); au != nil {
					out = append(out, a2a.Wrap(au, v))
				}
			}
			out = append(out, a2a.Wrap(a2a.StatusUpdateOf(&at, v), v))
		}
		last = st
	}
	return out
}

// pushItem renders one notification for config c.
func pushItem(c *store.PushConfig, v a2a.Version, ev any) (*a2aPushItem, error) {
	body, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("a2a push: %w", err)
	}
	it := &a2aPushItem{ContentType: "application/a2a+json", Body: body, Header: map[string]string{}}
	if v == a2a.V03 {
		it.ContentType = wire.ContentJSON
	}
	if c.Token != "" {
		it.Header["X-A2A-Notification-Token"] = c.Token
		it.Header["A2A-Notification-Token"] = c.Token
	}
	if h := authorization(c.Auth); h != "" {
		it.Header["Authorization"] = h
	}
	return it, nil
}

// authorization renders a push config's authentication as an
// Authorization header: v1.0 {scheme, credentials}, v0.3 {schemes,
// credentials}; "" without credentials.
func authorization(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var a struct {
		Scheme      string   `json:"scheme"`
		Schemes     []string `json:"schemes"`
		Credentials string   `json:"credentials"`
	}
	if json.Unmarshal(raw, &a) != nil || a.Credentials == "" {
		return ""
	}
	scheme := a.Scheme
	if scheme == "" && len(a.Schemes) > 0 {
		scheme = a.Schemes[0]
	}
	if scheme == "" {
		scheme = "Bearer"
	}
	if strings.ContainsAny(scheme+a.Credentials, "\r\n") {
		return ""
	}
	return scheme + " " + a.Credentials
}

// deliverA2APush sends a stored notification to its URL (a Callback: the
// HTTP transport dials it through the outbound policy).
func (o *deliverer) deliverA2APush(ctx context.Context, it *outbox.Item) *outbox.Failure {
	var item a2aPushItem
	if err := json.Unmarshal(it.Payload, &item); err != nil {
		return &outbox.Failure{Err: fmt.Errorf("stored a2a push: %w", err), Permanent: true}
	}
	h := map[string]string{transport.HeaderMessageID: it.ID}
	for k, v := range item.Header {
		h[textproto.CanonicalMIMEHeaderKey(k)] = v
	}
	return outbox.FailureOf(o.n.send(ctx, &transport.Message{Kind: transport.Callback, To: it.URL, Body: item.Body,
		ContentType: item.ContentType, Header: h}))
}
