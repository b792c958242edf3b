// Package clocktest is a fake clock.Clock for tests: its time moves only
// when Advance is called, and Advance runs the AfterFunc callbacks that fall
// due, in time order, on the caller's goroutine. Deadlines (task TTLs,
// escalation levels, heartbeats) are tested with it without sleeping.
package clocktest

import (
	"slices"
	"sync"
	"time"

	"github.com/synapse-edge/synapse/internal/clock"
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

var _ clock.Clock = (*Clock)(nil)

// New returns a clock showing start.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc calls f once the clock has been advanced by d.
func (c *Clock) AfterFunc(d time.Duration, f func()) clock.Timer {
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

// Advance moves the clock forward by d and runs every callback due by
// then, one at a time in time order with the clock showing its time: a
// callback that sets another one due within d sees it run too.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var due *timer
		for _, t := range c.timers { // in order of setting: the first of equal times runs first
			if !t.done && !t.at.After(end) && (due == nil || t.at.Before(due.at)) {
				due = t
			}
		}
		if due == nil {
			c.now = end
			c.mu.Unlock()
			return
		}
		due.done = true
		c.timers = slices.DeleteFunc(c.timers, func(t *timer) bool { return t == due })
		if due.at.After(c.now) {
			c.now = due.at
		}
		c.mu.Unlock()
		due.f()
	}
}

// Pending is the number of callbacks waiting.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}
