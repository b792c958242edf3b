package outbox

import (
	"testing"
	"time"
)

// TestBackoff: the wait after failure n+1 is within [0, base * 2^n],
// at most maxBackoff, and spread over that range (full jitter).
func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		base time.Duration
		n    int
		ceil time.Duration
	}{
		{time.Second, 0, time.Second},
		{time.Second, 3, 8 * time.Second},
		{2 * time.Second, 10, 2048 * time.Second},
		{2 * time.Second, 12, maxBackoff},
		{time.Second, 40, maxBackoff},
		{time.Second, 1000, maxBackoff},
		{2 * maxBackoff, 0, maxBackoff},
	} {
		var lo, hi time.Duration = tc.ceil, 0
		for range 200 {
			d := backoff(tc.base, tc.n)
			if d < 0 || d > tc.ceil {
				t.Fatalf("backoff(%s, %d) = %s, want within [0, %s]", tc.base, tc.n, d, tc.ceil)
			}
			lo, hi = min(lo, d), max(hi, d)
		}
		if lo > tc.ceil/4 || hi < tc.ceil*3/4 {
			t.Errorf("backoff(%s, %d) ranged over [%s, %s] in 200 draws, want most of [0, %s]", tc.base, tc.n, lo, hi, tc.ceil)
		}
	}
}
