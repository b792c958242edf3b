package testutil_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
)

// recorder is a testing.TB whose Fatalf records the message and ends the
// goroutine, as the real one does.
type recorder struct {
	testing.TB
	helper atomic.Bool
	fatal  string
}

func (r *recorder) Helper() { r.helper.Store(true) }

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls Eventually on a recorder in its own goroutine (Fatalf ends
// it) and returns the recorder once it ended.
func run(t *testing.T, within time.Duration, what string, cond func() bool) *recorder {
	t.Helper()
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		testutil.Eventually(r, within, what, cond)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Eventually did not return within 10s")
	}
	return r
}

func TestEventually(t *testing.T) {
	t.Run("holds at once", func(t *testing.T) {
		calls := 0
		r := run(t, time.Second, "x", func() bool { calls++; return true })
		if r.fatal != "" || calls != 1 {
			t.Errorf("fatal %q after %d calls, want none after 1", r.fatal, calls)
		}
		if !r.helper.Load() {
			t.Error("Eventually did not call t.Helper")
		}
	})
	t.Run("holds later", func(t *testing.T) {
		var calls atomic.Int32
		r := run(t, 10*time.Second, "the fifth call", func() bool { return calls.Add(1) == 5 })
		if r.fatal != "" || calls.Load() != 5 {
			t.Errorf("fatal %q after %d calls, want none after 5", r.fatal, calls.Load())
		}
	})
	t.Run("never holds", func(t *testing.T) {
		var calls atomic.Int32
		start := time.Now()
		r := run(t, 50*time.Millisecond, "the answer", func() bool { calls.Add(1); return false })
		took := time.Since(start)
		want := "timed out after 50ms waiting for the answer"
		if r.fatal != want {
			t.Errorf("fatal = %q, want %q", r.fatal, want)
		}
		if took < 50*time.Millisecond {
			t.Errorf("gave up after %v, before the deadline", took)
		}
		// Back-off 1, 2, 4, 8, 16, 20, 20 ms...: several calls, not a busy loop.
		if n := calls.Load(); n < 3 || n > 60 {
			t.Errorf("%d calls in 50ms, want a few", n)
		}
	})
	t.Run("cond fails the test", func(t *testing.T) {
		r := &recorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			testutil.Eventually(r, time.Minute, "x", func() bool { r.Fatalf("wrong state %d", 7); return false })
		}()
		<-done
		if !strings.Contains(r.fatal, "wrong state 7") {
			t.Errorf("fatal = %q, want cond's own message", r.fatal)
		}
	})
}
