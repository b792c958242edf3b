package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrBadRemoteA2A means a remote A2A task record lacks its task id, its
// remote id or its peer.
var ErrBadRemoteA2A = errors.New("remote A2A task needs a task id, a remote id and a peer")

// bucketA2ARemote holds the tasks this agent delegated to a peer over
// A2A (a contract's a2a_jsonrpc transport) whose outcome it still waits
// for, keyed by the local task id (package transport/a2aclient).
var bucketA2ARemote = []byte("a2a_remote")

// RemoteA2A is a task delegated over A2A: the local task, the peer and
// its A2A endpoint, and the id the peer gave the task there.
type RemoteA2A struct {
	TaskID    string    `json:"task_id"`
	Peer      string    `json:"peer"`
	URL       string    `json:"url"`
	RemoteID  string    `json:"remote_id"`
	CreatedAt time.Time `json:"created_at"`
}

// PutRemoteA2A writes r, replacing the record of the same task.
func (tx *Tx) PutRemoteA2A(r *RemoteA2A) error {
	if r.TaskID == "" || r.RemoteID == "" || r.Peer == "" {
		return fmt.Errorf("remote A2A task %q: %w", r.TaskID, ErrBadRemoteA2A)
	}
	b, err := tx.bucket(bucketA2ARemote)
	if err != nil {
		return err
	}
	return putJSON(b, []byte(r.TaskID), r)
}

// RemoteA2A reads the record of a local task; ErrNotFound if there is none.
func (tx *Tx) RemoteA2A(taskID string) (*RemoteA2A, error) {
	b, err := tx.bucket(bucketA2ARemote)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, ErrNotFound
	}
	r := new(RemoteA2A)
	if err := getJSON(b, []byte(taskID), r); err != nil {
		return nil, err
	}
	return r, nil
}

// RemoteA2As lists the records in task id order.
func (tx *Tx) RemoteA2As() ([]*RemoteA2A, error) {
	b, err := tx.bucket(bucketA2ARemote)
	if err != nil || b == nil {
		return nil, err
	}
	var out []*RemoteA2A
	err = b.ForEach(func(k, v []byte) error {
		r := new(RemoteA2A)
		if err := json.Unmarshal(v, r); err != nil {
			return fmt.Errorf("decode remote A2A task %q: %w", k, err)
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// DeleteRemoteA2A deletes the record of a local task (none is no error).
func (tx *Tx) DeleteRemoteA2A(taskID string) error {
	b, err := tx.bucket(bucketA2ARemote)
	if err != nil || b == nil {
		return err
	}
	return b.Delete([]byte(taskID))
}
