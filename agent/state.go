package agent

import (
	"fmt"

	"github.com/synapse-edge/synapse/wire"
)

// CanTransition reports whether a task may go from one state to another
// (wire.CanTransition: the table of seed 004 §3.2 and its extensions).
func CanTransition(from, to wire.Status) bool { return wire.CanTransition(from, to) }

// ErrIllegalTransition is wrapped by transition errors; an illegal
// transition is a bug and is refused.
var ErrIllegalTransition = fmt.Errorf("illegal task state transition")

func checkTransition(from, to wire.Status) error {
	if !CanTransition(from, to) {
		return fmt.Errorf("%w: %s → %s", ErrIllegalTransition, from, to)
	}
	return nil
}
