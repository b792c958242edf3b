package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// A2A push notifications. A task's A2A push configs (store.PushConfig) are
// stored with the task; the engine keeps the index of the live tasks that
// have some, and hands every change of such a task, with its configs, to
// the network (Network.Push) inside the transaction of the change: the
// network renders the notifications and queues them in the durable
// outbox, so they survive restarts and are retried like every webhook.

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
	if e.a.net == nil {
		return fmt.Errorf("no peer network to notify %d push configs of task %s", len(cfgs), next.ID)
	}
	return e.a.net.Push(tx, prev, next, cfgs)
}
