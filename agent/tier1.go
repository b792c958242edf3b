package agent

import (
	"context"
	"time"

	"github.com/synapse-edge/synapse/internal/metrics"
	"github.com/synapse-edge/synapse/store"
)

// Tier1 is tier 1 as the agent sees it (package tier1's Service, which
// the command builds from the config file's tier1 section and passes in
// Options.Tier1): opened over the agent's store, pruned with its
// retention, its routines offered in negotiations (Responder). The agent
// ingests nothing itself: the layers that do are given the ingestor by
// the command.
type Tier1 interface {
	// Open is called once the agent's store is open, before the network
	// opens and tasks are recovered; reg is the agent's metrics.
	Open(ctx context.Context, db *store.DB, reg *metrics.Registry) error
	// Prune applies tier 1's retention, at each of the agent's (Prune);
	// now is the agent's clock.
	Prune(ctx context.Context, now time.Time) error
	// Routine is the version and descriptor hash of the routine
	// capabilityID.
	Routine(capabilityID string) (version, hash string, ok bool)
	// Routines is the number of routines.
	Routines() int
}
