// Package clock is the source of time of everything that waits (task
// deadlines, TTLs, retention, the outbox's retries): an interface that
// tests fill with a fake one (internal/clocktest) so they never sleep, and
// Real, the system's. It imports nothing of the module, so that the
// engine and the outbox share it without either calling into the other.
package clock

import "time"

// Clock tells the time and runs a function after a while.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	Stop() bool
}

// Real is the system clock.
type Real struct{}

// Now is time.Now.
func (Real) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
