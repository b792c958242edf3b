package agent

import (
	"github.com/synapse-edge/synapse/agent/idemdb"
	"github.com/synapse-edge/synapse/wire"
)

// answerOf is the stored answer of r: a task, or the answer as sent.
func answerOf(r *idemdb.Record) *idemAnswer {
	if r.Task != nil {
		return &idemAnswer{task: r.Task.Answered()}
	}
	return &idemAnswer{sent: &IdemAnswer{Status: r.Status, ContentType: r.ContentType, Body: r.Body, TaskID: r.TaskID}}
}

// idemAnswer is a stored answer as claim finds it: exactly one
// of task and sent is set.
type idemAnswer struct {
	task *wire.Task
	sent *IdemAnswer
}
