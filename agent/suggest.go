package agent

import (
	"strings"

	"github.com/synapse-edge/synapse/internal/suggest"
	"github.com/synapse-edge/synapse/wire"
)

// errNoHandler is capability_lacking for an unknown task type, with the
// closest known type ("did you mean") and the list of task types in the
// message and in details (suggestion, task_types).
func (e *engine) errNoHandler(taskType string) error {
	var names []string
	for _, t := range e.a.handlers.types() {
		names = append(names, t.Type)
	}
	best := suggest.Closest(taskType, names)
	err := wire.Errorf(wire.CodeCapabilityLacking, "this agent has no handler for task type %q%s Its task types: %s",
		taskType, suggest.DidYouMean(best), strings.Join(names, ", ")).With("task_type", taskType).With("task_types", names)
	if best != "" {
		err = err.With("suggestion", best)
	}
	return err
}
