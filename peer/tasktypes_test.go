package peer_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/internal/clocktest"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

// TestPredefinedTaskTypes: the 15 ids of seed 000 §3.3 mean the same
// everywhere: a handler of one gets its name and description, and a
// directory query by one finds agents whose task type is the id as well
// as those that declare it among a task type's capabilities; other task
// types match by type only.
func TestPredefinedTaskTypes(t *testing.T) {
	if got := wire.PredefinedTaskTypes(); len(got) != 15 || got[0].Type != "text_generation" || got[14].Type != "reasoning" {
		t.Fatalf("predefined task types: %d, %v…", len(got), got[0])
	}
	clock := clocktest.New(time.Now().UTC())
	r := startPeerWith(t, "registry", agent.Options{Clock: clock})
	ctx := context.Background()

	noop := func(context.Context, *agent.Run) (any, error) { return nil, nil }
	if err := r.a.Handle(agent.Handler{Type: wire.SupportedTaskType{Type: "summarization"}, Func: noop}); err != nil {
		t.Fatal(err)
	}
	st, err := r.a.GetTaskTypeCapabilities("summarization")
	if err != nil || st.Name != "Summarization" || st.Description == "" {
		t.Errorf("declared task type = %+v, %v; want the seed's name and description", st, err)
	}

	register := func(id string, types ...wire.SupportedTaskType) {
		t.Helper()
		g := newRegistrant(t, id)
		reg := g.registration(wire.StandardInterfaces)
		reg.Capabilities.SupportedTaskTypes = types
		if _, err := r.a.Directory().Register(ctx, g.envelope(t, reg, clock.Now())); err != nil {
			t.Fatalf("Register(%s): %v", id, err)
		}
	}
	register("sys_plain", wire.SupportedTaskType{Type: "summarization"})
	register("sys_declares", wire.SupportedTaskType{Type: "acme.summarize", Capabilities: []string{"summarization", "pdf"}})
	register("sys_custom", wire.SupportedTaskType{Type: "acme.ocr", Capabilities: []string{"acme.summarize"}})
	register("sys_other", wire.SupportedTaskType{Type: "translation"})

	if got, want := find(t, r.a, peer.DirectoryQuery{TaskType: "summarization"}), []string{"sys_declares", "sys_plain"}; !slices.Equal(got, want) {
		t.Errorf("task_type=summarization finds %v, want %v", got, want)
	}
	if got, want := find(t, r.a, peer.DirectoryQuery{TaskType: "acme.summarize"}), []string{"sys_declares"}; !slices.Equal(got, want) {
		t.Errorf("a custom task type matches by type only: %v, want %v", got, want)
	}
	if got, want := find(t, r.a, peer.DirectoryQuery{TaskType: "summarization", Capability: "pdf"}), []string{"sys_declares"}; !slices.Equal(got, want) {
		t.Errorf("task_type and capability together: %v, want %v", got, want)
	}
}
