package memlimit

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// TrimOptions configure a Trimmer; the zero value is the agent's.
type TrimOptions struct {
	// Every is the time between two checks. Default 2 s.
	Every time.Duration
	// Quiet is the most bytes allocated between two checks for the second
	// to count as quiet. Default 512 KiB (an idle agent allocates a few
	// KiB a second: its heartbeats, timers and checkpoints).
	Quiet uint64
	// After is how many quiet checks in a row trim. Default 3.
	After int
	// Allocated returns the bytes allocated since the process started;
	// default the runtime's counter (/gc/heap/allocs:bytes).
	Allocated func() uint64
	// Free gives the free memory back; default debug.FreeOSMemory.
	Free func()
}

// Trimmer gives the memory that work left behind back to the system once
// the agent is quiet (see the package documentation).
type Trimmer struct {
	o TrimOptions
	// Trims counts the trims done.
	Trims atomic.Uint64

	mu       sync.Mutex
	last     uint64
	quietRun int
	trimmed  bool // since the last busy check
	stop     context.CancelFunc
	done     chan struct{}
}

// NewTrimmer returns a trimmer; Start runs it.
func NewTrimmer(o TrimOptions) *Trimmer {
	if o.Every <= 0 {
		o.Every = 2 * time.Second
	}
	if o.Quiet == 0 {
		o.Quiet = 512 << 10
	}
	if o.After <= 0 {
		o.After = 3
	}
	if o.Allocated == nil {
		o.Allocated = runtimeAllocated()
	}
	if o.Free == nil {
		o.Free = debug.FreeOSMemory
	}
	t := &Trimmer{o: o}
	t.last = o.Allocated()
	return t
}

// runtimeAllocated reads the runtime's count of heap bytes allocated.
func runtimeAllocated() func() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	var mu sync.Mutex
	return func() uint64 {
		mu.Lock()
		defer mu.Unlock()
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[0].Value.Uint64()
	}
}

// Check is one check: it reads the allocation counter and trims when the
// last After checks (this one included) were quiet and nothing was
// trimmed since the last busy one. It reports whether it trimmed.
func (t *Trimmer) Check() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.o.Allocated()
	grown := now - t.last
	t.last = now
	if grown > t.o.Quiet {
		t.quietRun, t.trimmed = 0, false
		return false
	}
	t.quietRun++
	if t.trimmed || t.quietRun < t.o.After {
		return false
	}
	t.o.Free()
	t.trimmed = true
	t.Trims.Add(1)
	// What the trim allocated itself is not work.
	t.last = t.o.Allocated()
	return true
}

// Start runs Check every TrimOptions.Every until ctx ends or Close.
func (t *Trimmer) Start(ctx context.Context) {
	ctx, stop := context.WithCancel(ctx)
	t.stop, t.done = stop, make(chan struct{})
	go func() {
		defer close(t.done)
		tick := time.NewTicker(t.o.Every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				t.Check()
			}
		}
	}()
}

// Close stops the checks and waits for them (at most until ctx ends). It
// is safe to call twice, and without Start.
func (t *Trimmer) Close(ctx context.Context) error {
	if t.stop == nil {
		return nil
	}
	t.stop()
	select {
	case <-t.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
