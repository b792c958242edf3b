package handlers_test

import (
	"context"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/handlers"
)

// admin is the principal tests submit as.
var admin = auth.Principal{ID: "admin", Name: "admin", Scopes: []auth.Scope{auth.ScopeAdmin}}

// testConfig is a valid agent configuration with its own data directory.
func testConfig(t *testing.T) agent.Config {
	t.Helper()
	cfg := agent.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.AdminToken = "t"
	cfg.AgentName = "tester"
	return cfg
}

// openAgent builds an agent with the handlers c configures and opens it;
// it is closed when the test ends (running tasks get 100 ms).
func openAgent(t *testing.T, c handlers.Config) *agent.Agent {
	t.Helper()
	a, err := agent.New(testConfig(t), agent.Options{})
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
