package agent_test

import (
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/wire"
)

// wantLegal is the transition table of seed 004 §3.2 as the engine must
// enforce it: the requester's diagram plus the executor's detours (ask for
// information, ask a person, fail, be cancelled) from every live state.
var wantLegal = map[wire.Status][]wire.Status{
	wire.StatusIdle:          {wire.StatusPending},
	wire.StatusPending:       {wire.StatusConfirmed, wire.StatusRejected, wire.StatusInfoNeeded, wire.StatusNeedHuman, wire.StatusFailed, wire.StatusCancelled},
	wire.StatusConfirmed:     {wire.StatusExecuting, wire.StatusInfoNeeded, wire.StatusNeedHuman, wire.StatusFailed, wire.StatusCancelled},
	wire.StatusExecuting:     {wire.StatusCompleted, wire.StatusFailed, wire.StatusCancelled, wire.StatusInfoNeeded, wire.StatusNeedHuman},
	wire.StatusInfoNeeded:    {wire.StatusInfoProvided, wire.StatusFailed, wire.StatusCancelled},
	wire.StatusInfoProvided:  {wire.StatusConfirmed, wire.StatusExecuting, wire.StatusInfoNeeded, wire.StatusNeedHuman, wire.StatusFailed, wire.StatusCancelled},
	wire.StatusNeedHuman:     {wire.StatusHumanDeciding, wire.StatusHumanApproved, wire.StatusHumanRejected, wire.StatusFailed, wire.StatusCancelled},
	wire.StatusHumanDeciding: {wire.StatusHumanApproved, wire.StatusHumanRejected, wire.StatusNeedHuman, wire.StatusFailed, wire.StatusCancelled},
	wire.StatusHumanApproved: {wire.StatusConfirmed, wire.StatusExecuting, wire.StatusFailed, wire.StatusCancelled},
	wire.StatusHumanRejected: {wire.StatusRejected, wire.StatusFailed, wire.StatusCancelled},
}

func TestCanTransitionTable(t *testing.T) {
	if len(wire.AllStatuses) != 14 {
		t.Fatalf("%d states, want 14", len(wire.AllStatuses))
	}
	for _, from := range wire.AllStatuses {
		want := map[wire.Status]bool{}
		for _, to := range wantLegal[from] {
			want[to] = true
		}
		for _, to := range wire.AllStatuses {
			t.Run(string(from)+"→"+string(to), func(t *testing.T) {
				if got := agent.CanTransition(from, to); got != want[to] {
					t.Errorf("CanTransition(%s, %s) = %v, want %v", from, to, got, want[to])
				}
			})
		}
	}
}

func TestCanTransitionKnownCases(t *testing.T) {
	tests := []struct {
		from, to wire.Status
		want     bool
	}{
		{wire.StatusExecuting, wire.StatusCompleted, true},
		{wire.StatusIdle, wire.StatusPending, true},
		{wire.StatusInfoNeeded, wire.StatusInfoProvided, true},
		{wire.StatusHumanRejected, wire.StatusRejected, true},
		{wire.StatusCompleted, wire.StatusExecuting, false},
		{wire.StatusIdle, wire.StatusCompleted, false},
		{wire.StatusPending, wire.StatusCompleted, false},
		{wire.StatusInfoNeeded, wire.StatusExecuting, false},
		{wire.StatusExecuting, wire.StatusExecuting, false},
		{wire.StatusCancelled, wire.StatusCancelled, false},
		{wire.StatusExecuting, wire.Status("bogus"), false},
		{wire.Status("bogus"), wire.StatusPending, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.from)+"→"+string(tt.to), func(t *testing.T) {
			if got := agent.CanTransition(tt.from, tt.to); got != tt.want {
				t.Errorf("CanTransition(%s, %s) = %v, want %v", tt.from, tt.to, got, tt.want)
			}
		})
	}
}

func TestTerminalStatesHaveNoExit(t *testing.T) {
	terminal := 0
	for _, from := range wire.AllStatuses {
		if !from.Terminal() {
			continue
		}
		terminal++
		for _, to := range wire.AllStatuses {
			if agent.CanTransition(from, to) {
				t.Errorf("final state %s has a transition to %s", from, to)
			}
		}
	}
	if terminal != 4 {
		t.Errorf("%d final states, want 4 (completed, failed, cancelled, rejected)", terminal)
	}
}

// Every live state except idle can be cancelled and can fail.
func TestLiveStatesCanStop(t *testing.T) {
	for _, from := range wire.AllStatuses {
		if from.Terminal() || from == wire.StatusIdle {
			continue
		}
		for _, to := range []wire.Status{wire.StatusFailed, wire.StatusCancelled} {
			if !agent.CanTransition(from, to) {
				t.Errorf("CanTransition(%s, %s) = false, want true", from, to)
			}
		}
	}
}
