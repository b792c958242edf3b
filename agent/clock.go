package agent

import "github.com/synapse-edge/synapse/internal/clock"

// Clock is the source of time for everything that waits: task deadlines,
// TTLs and retention. Tests inject a fake one so they never sleep.
type Clock = clock.Clock

// Timer is a pending AfterFunc call.
type Timer = clock.Timer
