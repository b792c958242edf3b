package group

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/synapse-edge/synapse/group/groupdb"
	"github.com/synapse-edge/synapse/store"
)

// Retention: closed votes and finished group tasks are deleted once they
// are older than the agent's retention age (retention.max_age_hours), and
// so are groups this agent left or that were disbanded that long ago, with
// everything of theirs. The manager prunes at Start and then every
// pruneEvery.
const (
	pruneEvery = time.Hour
	// pruneBatch bounds the records deleted per transaction.
	pruneBatch = 1000
)

// pruneLoop prunes every pruneEvery until Close.
func (m *Manager) pruneLoop() {
	t := time.NewTicker(pruneEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if _, err := m.Prune(m.bg); err != nil && !m.isClosed() {
				m.log.Error("prune groups", "err", err)
			}
		case <-m.bg.Done():
			return
		}
	}
}

// Prune applies retention once and returns how many records (votes, group
// tasks and groups) it deleted.
func (m *Manager) Prune(ctx context.Context) (int, error) {
	cutoff := m.now().Add(-m.maxAge)
	total := 0
	for range 1000 { // at most a million records per call
		var n int
		err := m.update(ctx, func(tx *store.Tx) error {
			var err error
			n, err = pruneOnce(tx, cutoff)
			return err
		})
		total += n
		if err != nil || n < pruneBatch {
			return total, err
		}
	}
	return total, nil
}

// errFull stops a scan once a batch is full.
var errFull = errors.New("batch full")

// pruneOnce deletes up to pruneBatch expired records.
func pruneOnce(tx *store.Tx, cutoff time.Time) (int, error) {
	type key struct{ group, id string }
	var groups []string
	var votes, tasks []key
	n := 0
	err := groupdb.Each(tx, func(id string, doc []byte) error {
		var g Group
		if json.Unmarshal(doc, &g) != nil {
			return nil
		}
		if (g.Status == StatusDisbanded || g.Standing == StandingFormer) && g.UpdatedAt.Before(cutoff) {
			groups = append(groups, id)
			if n++; n >= pruneBatch {
				return errFull
			}
		}
		return nil
	})
	if err == nil {
		err = groupdb.Votes(tx, "", func(groupID, voteID string, doc []byte) error {
			var v Vote
			if json.Unmarshal(doc, &v) == nil && v.Status == VoteClosed && v.ClosedAt.Before(cutoff) {
				votes = append(votes, key{groupID, voteID})
				if n++; n >= pruneBatch {
					return errFull
				}
			}
			return nil
		})
	}
	if err == nil {
		err = groupdb.Tasks(tx, "", func(groupID, taskID string, doc []byte) error {
			var t Task
			if json.Unmarshal(doc, &t) == nil && t.final() && t.FinishedAt.Before(cutoff) {
				tasks = append(tasks, key{groupID, taskID})
				if n++; n >= pruneBatch {
					return errFull
				}
			}
			return nil
		})
	}
	if err != nil && !errors.Is(err, errFull) {
		return 0, err
	}
	for _, id := range groups {
		if err := groupdb.Delete(tx, id); err != nil {
			return 0, err
		}
	}
	for _, k := range votes {
		if err := groupdb.DeleteVote(tx, k.group, k.id); err != nil {
			return 0, err
		}
	}
	for _, k := range tasks {
		if err := groupdb.DeleteTask(tx, k.group, k.id); err != nil {
			return 0, err
		}
	}
	return n, nil
}
