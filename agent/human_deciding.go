package agent

import (
	"context"
	"strconv"
	"time"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/wire"
)

// human_deciding (seed 004 §3.1, §3.2: need_human ↔ human_decision).
//
// Every decision on a task in need_human passes through human_deciding,
// persisted with who decides, before human_approved or human_rejected:
// a person's decision here, a peer's p2p:human_decision for a task it
// asked for, the approval policy's decision, and a decision on a task
// delegated to a peer (recorded here before it is sent). A decision that
// does not close the request goes back: a reviewer who hands the request
// to the next escalation level (a second reviewer; hil's "escalate"
// action) moves the task need_human → human_deciding → need_human, with
// the new escalation_level in its request (HandOver).

// toDeciding moves t from need_human to human_deciding; nothing when t is
// already deciding.
func (e *engine) toDeciding(t *wire.Task, now time.Time, by string) ([]*wire.Event, error) {
	if t.Status != wire.StatusNeedHuman {
		return nil, nil
	}
	return e.transition(t, wire.StatusHumanDeciding, now, "decision by "+by)
}

// HandOver records that p passed a task waiting for a person on to
// another reviewer at escalation level: need_human → human_deciding →
// need_human, the request's escalation_level set to level. The task
// still waits for a decision.
func (a *Agent) HandOver(ctx context.Context, p auth.Principal, id string, level int, note string) (*wire.Task, error) {
	e := a.eng
	r := e.live(id)
	if r == nil {
		if _, err := e.get(id); err != nil {
			return nil, err
		}
		return nil, wire.Errorf(wire.CodeInvalidStateChange, "task %s is not waiting for a person", id)
	}
	err := e.apply(r, true, func(t *wire.Task, now time.Time) ([]*wire.Event, error) {
		if t.Status != wire.StatusNeedHuman {
			return nil, wire.Errorf(wire.CodeInvalidStateChange, "task %s is %s, not need_human", id, t.Status)
		}
		evs, err := e.toDeciding(t, now, p.ID)
		if err != nil {
			return nil, err
		}
		if t.Human != nil {
			h := *t.Human
			h.EscalationLevel = level
			t.Human = &h
		}
		reason := "handed to escalation level " + strconv.Itoa(level) + " by " + p.ID
		if note != "" {
			reason += ": " + note
		}
		more, err := e.transition(t, wire.StatusNeedHuman, now, reason)
		return append(evs, more...), err
	})
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return e.get(id)
}
