// Package testutil holds the small helpers every test package shares.
//
// Eventually is the one way a test waits for a state: it polls a condition
// until it holds or a deadline passes, and never sleeps longer than the
// poll interval, so a test is as fast as the state it waits for.
package testutil

import (
	"testing"
	"time"
)

// maxPollInterval bounds the back-off between two calls of a condition.
const maxPollInterval = 20 * time.Millisecond

// Eventually calls cond until it returns true, first at once, then with a
// back-off from 1 ms to 20 ms between calls. When within passes first it
// fails the test with "timed out after WITHIN waiting for WHAT". cond may
// itself fail the test (t.Fatal) when it sees a state that can never turn
// into the awaited one.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for delay := time.Millisecond; ; delay = min(2*delay, maxPollInterval) {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
			return
		}
		time.Sleep(delay) // the poll interval, not a wait for a state
	}
}
