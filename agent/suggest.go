package agent

import (
	"strings"

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
	best, bestD := "", 3 // at most two edits away
	for _, n := range names {
		if d := editDistance(strings.ToLower(taskType), strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	msg := "this agent has no handler for task type %q"
	args := []any{taskType}
	if best != "" {
		msg += "; did you mean %q?"
		args = append(args, best)
	}
	msg += " Its task types: %s"
	args = append(args, strings.Join(names, ", "))
	err := wire.Errorf(wire.CodeCapabilityLacking, msg, args...).With("task_type", taskType).With("task_types", names)
	if best != "" {
		err = err.With("suggestion", best)
	}
	return err
}

// editDistance is the Levenshtein distance of a and b (bytes), with an
// adjacent transposition counted as one edit.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
