package httpapi

import (
	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// taskSummary serves GET /tasks/summary: the stored tasks counted by
// status, {"total":N,"by_status":{"completed":N,...}} (statuses with no
// task are left out). It reads every task record, so it is for a console
// or an operator, not for polling many times a second.
func (s *Server) taskSummary(ctx *fasthttp.RequestCtx, _ agent.Principal, _ []string) error {
	var by map[wire.Status]int
	err := s.a.Store().View(func(tx *store.Tx) error {
		var err error
		by, err = tx.CountTasksByStatus()
		return err
	})
	if err != nil {
		return wire.Errorf(wire.CodeSysStorage, "count tasks: %v", err)
	}
	total := 0
	for _, n := range by {
		total += n
	}
	write(ctx, fasthttp.StatusOK, map[string]any{"total": total, "by_status": by})
	return nil
}
