package peer

import (
	"testing"
	"time"
)

// TestHMACReplayMemory: a (sender, t, body) is accepted once; entries
// outside the window are forgotten so the memory stays small.
func TestHMACReplayMemory(t *testing.T) {
	var g hmacGuard
	now := time.Unix(1_800_000_000, 0)
	if !g.remember("a", now.Unix(), []byte("x"), now) {
		t.Fatal("first use refused")
	}
	if g.remember("a", now.Unix(), []byte("x"), now) {
		t.Error("a replay was accepted")
	}
	if !g.remember("b", now.Unix(), []byte("x"), now) || !g.remember("a", now.Unix(), []byte("y"), now) {
		t.Error("another sender or body was refused")
	}
	later := now.Add(11 * time.Minute)
	if !g.remember("a", later.Unix(), []byte("z"), later) {
		t.Fatal("a fresh signature was refused")
	}
	if len(g.seen) != 1 {
		t.Errorf("%d entries remembered after the window passed, want 1", len(g.seen))
	}
}
