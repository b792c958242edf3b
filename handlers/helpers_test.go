package handlers_test

import (
	"context"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/handlers"
	"github.com/synapse-edge/synapse/internal/testutil/tasktest"
	"github.com/synapse-edge/synapse/internal/testutil/wiretest"
)

// admin is the principal tests submit as.
var admin = tasktest.Admin

// testConfig is a valid configuration with its own data directory.
func testConfig(t *testing.T) agent.Config { return tasktest.Config(t) }

// openAgent builds an agent with the handlers c configures and opens it;
// it is closed when the test ends (running tasks get 100 ms).
func openAgent(t *testing.T, c handlers.Config) *agent.Agent {
	t.Helper()
	cfg := testConfig(t)
	a, err := agent.New(cfg, wiretest.Options(t, cfg, agent.Options{}))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := handlers.Register(a, handlers.Options{Config: c}); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if err := a.Open(context.Background()); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if err := a.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return a
}
