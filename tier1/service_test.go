package tier1_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/metrics"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/tier1"
)

// TestService: a service holds the built-in routine and the section's,
// names them for a negotiation, builds its ingestor over the store it is
// opened on, and prunes with the section in force (SetConfig), as the
// agent that opens it does.
func TestService(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	c := tier1.DefaultConfig()
	c.Routines = []tier1.Descriptor{mixed()}
	s, err := tier1.NewService(c, tier1.ServiceOptions{Now: func() time.Time { return now }, SeenFor: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if n := s.Routines(); n != 2 {
		t.Errorf("Routines() = %d, want 2", n)
	}
	tel := tier1.Telemetry()
	if v, h, ok := s.Routine(tel.CapabilityID); !ok || v != tel.Version || h != tel.Hash() {
		t.Errorf("Routine(%s) = %s, %s, %v", tel.CapabilityID, v, h, ok)
	}
	if _, _, ok := s.Routine("nope"); ok {
		t.Error("Routine(nope) found")
	}
	if s.Ingestor() != nil {
		t.Error("an ingestor before Open")
	}
	path := filepath.Join(t.TempDir(), "s.db")
	db, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	reg := metrics.New()
	ctx := context.Background()
	if err := s.Open(ctx, db, reg); err != nil {
		t.Fatal(err)
	}
	in := s.Ingestor()
	if in == nil || in.Registry() != s.Registry() {
		t.Fatalf("Ingestor() = %v after Open, want one over the service's registry", in)
	}
	if _, err := in.Ingest(ctx, "s", "", batchAt("old", "d1", 0, now.Add(-100*time.Hour), 5)); err != nil {
		t.Fatal(err)
	}
	if err := s.Prune(ctx, now); err != nil {
		t.Fatal(err)
	}
	if st, _ := in.Stored(tel.CapabilityID); st.Frames != 5 {
		t.Errorf("kept %d frames under retention_hours 720, want 5", st.Frames)
	}
	next := s.Config()
	next.RetentionHours = 10
	s.SetConfig(next)
	if s.Config().RetentionHours != 10 {
		t.Errorf("Config() after SetConfig: %+v", s.Config())
	}
	if err := s.Prune(ctx, now); err != nil {
		t.Fatal(err)
	}
	if st, _ := in.Stored(tel.CapabilityID); st.Frames != 0 {
		t.Errorf("kept %d frames 100 h old under retention_hours 10, want none", st.Frames)
	}
	var b strings.Builder
	reg.Write(&b)
	if !strings.Contains(b.String(), "synapse_tier1_stored_bytes") {
		t.Errorf("no tier-1 metrics on the registry it was opened with:\n%s", b.String())
	}

	dup := tier1.DefaultConfig()
	dup.Routines = []tier1.Descriptor{tel}
	if _, err := tier1.NewService(dup, tier1.ServiceOptions{}); err == nil {
		t.Error("NewService with the built-in routine again: no error")
	}
}
