package a2a

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// ErrBadRemoteTask means a remote task record lacks its task id, its
// remote id or its peer.
var ErrBadRemoteTask = errors.New("remote A2A task needs a task id, a remote id and a peer")

// RemoteTask is a task delegated over A2A (a contract's a2a_jsonrpc
// transport, package transport/a2aclient) whose outcome this agent still
// waits for: the local task, the peer and its A2A endpoint, and the id
// the peer gave the task there.
type RemoteTask struct {
	TaskID    string    `json:"task_id"`
	Peer      string    `json:"peer"`
	URL       string    `json:"url"`
	RemoteID  string    `json:"remote_id"`
	CreatedAt time.Time `json:"created_at"`
}

// remoteTasks are the records of the remote tasks, by local task id. The
// bucket and the JSON are those the store kept them in before they were
// A2A's (issue 31): files written since open unchanged.
var remoteTasks = store.JSONRecords[RemoteTask]("a2a_remote")

// Ledger keeps the remote tasks in the agent's store; transport/a2aclient
// tracks them through it (its Ledger interface), knowing no store.
type Ledger struct {
	db *store.DB
}

// NewLedger returns the ledger of the remote tasks kept in db.
func NewLedger(db *store.DB) *Ledger { return &Ledger{db: db} }

// RemoteTasks lists the records in local task id order.
func (l *Ledger) RemoteTasks() ([]*RemoteTask, error) {
	var out []*RemoteTask
	err := l.db.View(func(tx *store.Tx) error {
		return remoteTasks.Scan(tx, nil, func(_ []byte, r *RemoteTask) error {
			c := *r
			out = append(out, &c)
			return nil
		})
	})
	return out, err
}

// RemoteTask reads the record of a local task; nil, nil when there is
// none.
func (l *Ledger) RemoteTask(taskID string) (*RemoteTask, error) {
	var r *RemoteTask
	err := l.db.View(func(tx *store.Tx) error {
		var err error
		r, err = remoteTasks.Get(tx, []byte(taskID))
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return r, err
}

// PutRemoteTask writes r durably, replacing the record of the same task.
func (l *Ledger) PutRemoteTask(ctx context.Context, r *RemoteTask) error {
	if r.TaskID == "" || r.RemoteID == "" || r.Peer == "" {
		return fmt.Errorf("remote A2A task %q: %w", r.TaskID, ErrBadRemoteTask)
	}
	return l.db.Update(ctx, func(tx *store.Tx) error { return remoteTasks.Put(tx, []byte(r.TaskID), r) })
}

// DeleteRemoteTask deletes the record of a local task (none is no error).
func (l *Ledger) DeleteRemoteTask(ctx context.Context, taskID string) error {
	return l.db.Update(ctx, func(tx *store.Tx) error { return remoteTasks.Delete(tx, []byte(taskID)) })
}

// LocalTask reads a local task; nil, nil when there is none.
func (l *Ledger) LocalTask(taskID string) (*wire.Task, error) {
	var task *wire.Task
	err := l.db.View(func(tx *store.Tx) error {
		var err error
		task, err = tx.Task(taskID)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return task, err
}
