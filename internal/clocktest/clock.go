// Package clocktest is a fake agent.Clock for tests: its time moves only
// when Advance is called, and Advance runs the AfterFunc callbacks that fall
// due, in time order, on the caller's goroutine. Deadlines (task TTLs,
// escalation levels, heartbeats) are tested with it without sleeping.
package clocktest

import (
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/synapse-edge/synapse/agent"
)

// Clock is the fake clock.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*timer
}

type timer struct {
	c    *Clock
	at   time.Time
	f    func()
	done bool // fired or stopped
}

var _ agent.Clock = (*Clock)(nil)

// New returns a clock showing start.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc calls f once the clock has been advanced by d.
func (c *Clock) AfterFunc(d time.Duration, f func()) agent.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// Stop cancels the call; false if it already ran or was stopped.
func (t *timer) Stop() bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	// Forget it, as a real timer would: the callback may hold a lot.
	if i := slices.Index(c.timers, t); i >= 0 {
		c.timers = slices.Delete(c.timers, i, i+1)
	}
	return true
}

// Advance moves the clock forward by d and runs every callback due by then.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*timer
	live := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.done:
		case !t.at.After(c.now):
			t.done = true
			due = append(due, t)
		default:
			live = append(live, t)
		}
	}
	c.timers = live
	c.mu.Unlock()
	sort.SliceStable(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		t.f()
	}
}

// Pending is the number of callbacks waiting.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}
