package httpapi

import (
	"github.com/synapse-edge/synapse/auth"
	"github.com/valyala/fasthttp"
)

// taskSummary serves GET /tasks/summary: the stored tasks counted by
// status, {"total":N,"by_status":{"completed":N,...}} (statuses with no
// task are left out; agent.TaskSummary).
func (s *Server) taskSummary(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	sum, err := s.a.TaskSummary()
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, sum)
	return nil
}
