package agent

import (
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// TaskSummary is the stored tasks counted by status.
type TaskSummary struct {
	// ByStatus leaves out the statuses that no task is in.
	ByStatus map[wire.Status]int `json:"by_status" msgpack:"by_status"`
	Total    int                 `json:"total" msgpack:"total"`
}

// TaskSummary counts the stored tasks by status. It reads every task
// record, so it is for a console or an operator, not for polling many
// times a second.
func (a *Agent) TaskSummary() (*TaskSummary, error) {
	var by map[wire.Status]int
	err := a.db.View(func(tx *store.Tx) (err error) {
		by, err = tx.CountTasksByStatus()
		return err
	})
	if err != nil {
		return nil, wire.Errorf(wire.CodeSysStorage, "count tasks: %v", err)
	}
	s := &TaskSummary{ByStatus: by}
	for _, n := range by {
		s.Total += n
	}
	return s, nil
}
