package agent_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/internal/metrics"
	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/store"
)

// fakeTier1 records what the agent asks of its tier 1.
type fakeTier1 struct {
	openErr error
	mu      sync.Mutex
	db      *store.DB
	reg     *metrics.Registry
	pruned  []time.Time
}

func (f *fakeTier1) Open(_ context.Context, db *store.DB, reg *metrics.Registry) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.db, f.reg = db, reg
	return f.openErr
}

func (f *fakeTier1) Prune(_ context.Context, now time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pruned = append(f.pruned, now)
	return nil
}

func (f *fakeTier1) Routine(id string) (string, string, bool) {
	if id != "plant.alarms" {
		return "", "", false
	}
	return "1.0.0", "sha256:00", true
}

func (f *fakeTier1) Routines() int { return 1 }

// TestTier1: the agent opens Options.Tier1 over its store and metrics,
// prunes it with its retention at its clock's time, and offers its
// routines in negotiations; without one it offers none. An error of its
// Open fails the agent's.
func TestTier1(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig(t)
	f := &fakeTier1{}
	a, err := agent.New(cfg, agent.Options{Clock: clock, Tier1: f})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAgent(t, a, 100*time.Millisecond) })
	f.mu.Lock()
	if f.db != a.Store() || f.reg != a.Metrics() {
		t.Errorf("Open got %p and %p, want the agent's store %p and metrics %p", f.db, f.reg, a.Store(), a.Metrics())
	}
	f.mu.Unlock()
	if _, err := a.Prune(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	if n := len(f.pruned); n == 0 || !f.pruned[n-1].Equal(clock.Now()) {
		t.Errorf("pruned at %v, want at the agent's clock %v", f.pruned, clock.Now())
	}
	f.mu.Unlock()
	r := a.Responder()
	if r.Routines != 1 || r.Routine == nil {
		t.Fatalf("Responder: %d routines", r.Routines)
	}
	if ref, ok := r.Routine("plant.alarms"); !ok || ref != (negotiate.CapabilityRef{CapabilityID: "plant.alarms", Version: "1.0.0", DescriptorHash: "sha256:00"}) {
		t.Errorf("Routine(plant.alarms) = %+v, %v", ref, ok)
	}
	if _, ok := r.Routine("nope"); ok {
		t.Error("Routine(nope) found")
	}

	plain := openAgent(t, testConfig(t), nil)
	if r := plain.Responder(); r.Routines != 0 || r.Routine != nil {
		t.Errorf("an agent without tier 1 offers %d routines", r.Routines)
	}

	boom := errors.New("boom")
	b, err := agent.New(testConfig(t), agent.Options{Tier1: &fakeTier1{openErr: boom}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Open(context.Background()); !errors.Is(err, boom) {
		t.Errorf("Open = %v, want tier 1's error", err)
	}
}
