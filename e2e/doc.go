// Package e2e holds end-to-end tests of the built synapse binary. It has no
// code of its own: the tests build the binary once (go build of the module's
// main package), run "synapse serve" as real processes on loopback ports
// with temporary data directories (client/agenttest, the process harness
// the cli and client tests use too), and drive them over HTTP and through
// the command line.
//
// # What they cover
//
//   - durability: tasks acknowledged with 201 survive SIGKILL at random
//     moments under load, a retried request with the same Idempotency-Key is
//     still one task, and "synapse db check" finds the file sound afterwards;
//   - the restart rules of SPEC §5.5: idempotent handlers run again, others
//     fail with agent_restarted;
//   - the data directory lock, graceful SIGTERM, idempotency records across
//     restarts, the msgpack length limits, and online backups.
//
// # Running
//
//	go test ./e2e                       # about half a minute on 2 cores
//	go test -short ./e2e                # skips the long durability test
//	SYNAPSE_E2E_RACE=1 go test ./e2e    # the agent binary built with -race
//
// Each test prints the agents' standard error when it fails.
package e2e
