package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/synapse-edge/synapse/a2a"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// A2A push notifications. A task's A2A push configs (store.PushConfig) are
// stored with the task; every change of the task's A2A state is queued, in
// the transaction of the change, in the durable outbox for each config's
// URL, so notifications survive restarts and are retried like every
// webhook. A v1.0 config gets a StreamResponse per event, as the reference
// servers send them: {"task"} when the task is created with the config,
// {"statusUpdate"} per A2A state change, {"artifactUpdate"} with the result
// before the final status; Content-Type application/a2a+json. A v0.3
// config gets the task (kind "task") as it is after each of those changes
// (with its artifacts once final), application/json.
// The config's token rides in X-A2A-Notification-Token (and in
// A2A-Notification-Token, the header a2a-go's sender uses); its
// authentication ({scheme, credentials}, or v0.3's {schemes,
// credentials}) becomes the Authorization header.

// A2APushType is the outbox Type of an A2A push notification.
const A2APushType = "a2a_push"

// PushItem is the stored form of one A2A push notification (the Payload
// of an Outgoing of type A2APushType).
type PushItem struct {
	ContentType string            `json:"content_type"`
	Header      map[string]string `json:"header,omitempty"`
	Body        json.RawMessage   `json:"body"`
}

// pushIndex is the set of live tasks that have push configs, so that a
// state change of any other task costs a map look-up. It may hold more
// than that (an entry is added before its config is written); never less.
type pushIndex struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

func (x *pushIndex) add(id string) {
	x.mu.Lock()
	if x.ids == nil {
		x.ids = map[string]struct{}{}
	}
	x.ids[id] = struct{}{}
	x.mu.Unlock()
}

func (x *pushIndex) drop(id string) {
	x.mu.Lock()
	delete(x.ids, id)
	x.mu.Unlock()
}

func (x *pushIndex) has(id string) bool {
	x.mu.Lock()
	_, ok := x.ids[id]
	x.mu.Unlock()
	return ok
}

// loadPushIndex indexes the live tasks that have push configs.
func (e *engine) loadPushIndex() error {
	return e.db.View(func(tx *store.Tx) error {
		return tx.PushTaskIDs(func(id string) error {
			t, err := tx.Task(id)
			if err == nil && !t.Status.Terminal() {
				e.pushes.add(id)
			}
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			return err
		})
	})
}

type pushCtxKey struct{}

// WithPushConfig returns a context under which a submission stores c as
// the new task's push config in the task's own transaction, so the
// notifications start with the task's creation.
func WithPushConfig(ctx context.Context, c *store.PushConfig) context.Context {
	return context.WithValue(ctx, pushCtxKey{}, c)
}

// withPush wraps a task's create write with the push config ctx carries.
func (e *engine) withPush(ctx context.Context, t *wire.Task, fn func(*store.Tx) error) func(*store.Tx) error {
	c, _ := ctx.Value(pushCtxKey{}).(*store.PushConfig)
	if c == nil {
		return fn
	}
	return func(tx *store.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		rec := *c
		rec.TaskID = t.ID
		if err := tx.PutPushConfig(&rec); err != nil {
			return err
		}
		e.pushes.add(t.ID)
		return e.pushOut(tx, nil, t)
	}
}

// PutPushConfig stores a push config of an existing task; the task's next
// changes are notified to it.
func (a *Agent) PutPushConfig(ctx context.Context, c *store.PushConfig) error {
	if err := a.needNetwork("a push config"); err != nil {
		return err
	}
	if _, err := a.eng.get(c.TaskID); err != nil {
		return err
	}
	a.eng.pushes.add(c.TaskID)
	return a.db.Update(ctx, func(tx *store.Tx) error { return tx.PutPushConfig(c) })
}

// DeletePushConfig deletes one push config of a task; store.ErrNotFound
// when there is none.
func (a *Agent) DeletePushConfig(ctx context.Context, taskID, id string) error {
	return a.db.Update(ctx, func(tx *store.Tx) error { return tx.DeletePushConfig(taskID, id) })
}

// pushOut queues, in tx, the notifications of the change from prev (nil:
// the task is being created) to next for each of the task's push configs.
func (e *engine) pushOut(tx *store.Tx, prev, next *wire.Task) error {
	if !e.pushes.has(next.ID) {
		return nil
	}
	if next.Status.Terminal() {
		id := next.ID
		tx.OnCommit(func() { e.pushes.drop(id) })
	}
	cfgs, err := tx.PushConfigs(next.ID)
	if err != nil || len(cfgs) == 0 {
		return err
	}
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
			if err := e.enqueue(tx, []Outgoing{{URL: c.URL, Type: A2APushType, Payload: item}}); err != nil {
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
func pushItem(c *store.PushConfig, v a2a.Version, ev any) (*PushItem, error) {
	body, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("a2a push: %w", err)
	}
	it := &PushItem{ContentType: "application/a2a+json", Body: body, Header: map[string]string{}}
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
