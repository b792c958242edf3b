package agent

import (
	"github.com/synapse-edge/synapse/store"
)

// The reads the A2A binding needs beside the task methods, so that it
// does not reach into the store (PutPushConfig, DeletePushConfig and the
// notifications are in a2a_push.go).

// PushConfig is an A2A push notification config of one task.
type PushConfig = store.PushConfig

// ErrNoPushConfig is what PushConfig and DeletePushConfig return when the
// task has no such config (it is store.ErrNotFound).
var ErrNoPushConfig = store.ErrNotFound

// PushConfig is one push config of a task; with id empty, the task's first.
// ErrNoPushConfig when there is none.
func (a *Agent) PushConfig(taskID, id string) (*store.PushConfig, error) {
	var rec *store.PushConfig
	err := a.db.View(func(tx *store.Tx) error {
		if id != "" {
			var err error
			rec, err = tx.PushConfig(taskID, id)
			return err
		}
		all, err := tx.PushConfigs(taskID)
		if err != nil {
			return err
		}
		if len(all) == 0 {
			return store.ErrNotFound
		}
		rec = all[0]
		return nil
	})
	return rec, err
}

// PushConfigs lists a task's push configs in id order.
func (a *Agent) PushConfigs(taskID string) ([]*store.PushConfig, error) {
	var all []*store.PushConfig
	err := a.db.View(func(tx *store.Tx) (err error) {
		all, err = tx.PushConfigs(taskID)
		return err
	})
	return all, err
}

// CountTasks is how many tasks the agent holds.
func (a *Agent) CountTasks() (int, error) {
	n := 0
	err := a.db.View(func(tx *store.Tx) error { n = tx.CountTasks(); return nil })
	return n, err
}
