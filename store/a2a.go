package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrBadPushConfig means a push config lacks its task or config id, or
// one holds a NUL byte.
var ErrBadPushConfig = errors.New("push config needs a task id and an id, without NUL bytes")

// bucketA2APush holds the A2A push notification configs of tasks, keyed
// task id, NUL, config id.
var bucketA2APush = []byte("a2a_push")

// maxPushConfigs bounds the configs listed for one task.
const maxPushConfigs = 64

// PushConfig is an A2A push notification config of one task.
type PushConfig struct {
	TaskID    string          `json:"task_id"`
	ID        string          `json:"id"`
	URL       string          `json:"url"`
	Token     string          `json:"token,omitempty"`
	Auth      json.RawMessage `json:"authentication,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	// Version is the A2A version the config was created in ("0.3"; empty
	// for 1.0): it decides the shape of the notifications.
	Version string `json:"version,omitempty"`
}

func pushKey(taskID, id string) []byte {
	k := make([]byte, 0, len(taskID)+1+len(id))
	k = append(k, taskID...)
	k = append(k, 0)
	return append(k, id...)
}

// PutPushConfig writes c, replacing a config with the same task and id.
func (tx *Tx) PutPushConfig(c *PushConfig) error {
	if c.TaskID == "" || c.ID == "" || bytes.IndexByte([]byte(c.TaskID+c.ID), 0) >= 0 {
		return fmt.Errorf("push config %q of task %q: %w", c.ID, c.TaskID, ErrBadPushConfig)
	}
	b, err := tx.bucket(bucketA2APush)
	if err != nil {
		return err
	}
	return putJSON(b, pushKey(c.TaskID, c.ID), c)
}

// PushConfig reads one config; ErrNotFound if there is none.
func (tx *Tx) PushConfig(taskID, id string) (*PushConfig, error) {
	b, err := tx.bucket(bucketA2APush)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, ErrNotFound
	}
	c := new(PushConfig)
	if err := getJSON(b, pushKey(taskID, id), c); err != nil {
		return nil, err
	}
	return c, nil
}

// PushConfigs lists up to 64 configs of a task, by id.
func (tx *Tx) PushConfigs(taskID string) ([]*PushConfig, error) {
	b, err := tx.bucket(bucketA2APush)
	if err != nil || b == nil {
		return nil, err
	}
	prefix := pushKey(taskID, "")
	var out []*PushConfig
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(out) < maxPushConfigs; k, v = c.Next() {
		pc := new(PushConfig)
		if err := json.Unmarshal(v, pc); err != nil {
			return nil, fmt.Errorf("decode push config %q: %w", k, err)
		}
		out = append(out, pc)
	}
	return out, nil
}

// DeletePushConfig deletes one config; ErrNotFound if there is none.
func (tx *Tx) DeletePushConfig(taskID, id string) error {
	b, err := tx.bucket(bucketA2APush)
	if err != nil {
		return err
	}
	k := pushKey(taskID, id)
	if b == nil || b.Get(k) == nil {
		return ErrNotFound
	}
	return b.Delete(k)
}

// PushTaskIDs calls fn with the id of every task that has push configs,
// once each, in id order.
func (tx *Tx) PushTaskIDs(fn func(taskID string) error) error {
	b, err := tx.bucket(bucketA2APush)
	if err != nil || b == nil {
		return err
	}
	last := ""
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		id, _, _ := bytes.Cut(k, []byte{0})
		if string(id) == last {
			continue
		}
		last = string(id)
		if err := fn(last); err != nil {
			return err
		}
	}
	return nil
}

// deletePushConfigs deletes every push config of a task (with the task).
func (tx *Tx) deletePushConfigs(taskID string) error {
	b := tx.root(bucketA2APush)
	if b == nil {
		return nil
	}
	prefix := pushKey(taskID, "")
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
