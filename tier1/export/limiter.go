package export

import (
	"context"
	"sync"
	"time"
)

// bucket is a token bucket of bytes per second that may go into debt: a
// take of n bytes is granted at once when the bucket is not in debt, and
// the bucket then waits out the debt (-tokens/rate) before the next. So
// the bytes granted over any window of d stay within rate*d plus one
// take, and a take larger than the bucket still goes (a capped export
// makes progress). A rate of 0 is no cap.
type bucket struct {
	rate   float64 // bytes per second
	burst  float64 // the most tokens saved while idle
	tokens float64
	last   time.Time
}

func newBucket(rate int64, now time.Time) *bucket {
	if rate <= 0 {
		return nil
	}
	// Saving at most 0.2 s while idle keeps a 10 s window within 2 % of the
	// cap plus one take.
	r := float64(rate)
	return &bucket{rate: r, burst: r / 5, last: now}
}

// refill adds the tokens earned up to now.
func (b *bucket) refill(now time.Time) {
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(b.tokens+d.Seconds()*b.rate, b.burst)
		b.last = now
	}
}

// wait is how long until the bucket is out of debt (0: now).
func (b *bucket) wait(now time.Time) time.Duration {
	b.refill(now)
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.rate * float64(time.Second))
}

// limiter is the global cap shared by the exports: a take waits until the
// bucket is out of debt and no export of higher priority waits. The
// priority of a waiting take rises by one each agingStep it waits, so a
// low-priority export still makes progress under a saturating higher one.
type limiter struct {
	mu      sync.Mutex
	b       *bucket // nil: no global cap
	waiting map[*waiter]struct{}
	changed chan struct{} // closed and replaced whenever a take is granted or leaves
	now     func() time.Time
}

type waiter struct {
	prio  int
	since time.Time
}

const agingStep = 250 * time.Millisecond

func newLimiter(rate int64, now func() time.Time) *limiter {
	return &limiter{b: newBucket(rate, now()), waiting: map[*waiter]struct{}{}, changed: make(chan struct{}), now: now}
}

func (w *waiter) effective(now time.Time) time.Duration {
	return time.Duration(w.prio)*agingStep - now.Sub(w.since)
}

// take waits until n bytes at priority prio may go (or ctx is done).
func (l *limiter) take(ctx context.Context, prio int, n int) error {
	l.mu.Lock()
	if l.b == nil {
		l.mu.Unlock()
		return nil
	}
	w := &waiter{prio: prio, since: l.now()}
	l.waiting[w] = struct{}{}
	defer func() {
		delete(l.waiting, w)
		close(l.changed)
		l.changed = make(chan struct{})
		l.mu.Unlock()
	}()
	for {
		now := l.now()
		first := true
		for o := range l.waiting {
			if o != w && (o.effective(now) < w.effective(now) || (o.effective(now) == w.effective(now) && o.since.Before(w.since))) {
				first = false
				break
			}
		}
		var d time.Duration
		if l.b == nil { // the cap was lifted while this waited
			return nil
		}
		if first {
			if d = l.b.wait(now); d == 0 {
				l.b.tokens -= float64(n)
				return nil
			}
		} else {
			d = 100 * time.Millisecond // look again: the first may leave
		}
		ch := l.changed
		l.mu.Unlock()
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ch:
		case <-ctx.Done():
			t.Stop()
			l.mu.Lock()
			return ctx.Err()
		}
		t.Stop()
		l.mu.Lock()
	}
}

// setRate changes the cap to rate bytes per second (0: none) at once; a
// take waiting sees it at its next look.
func (l *limiter) setRate(rate int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = retune(l.b, rate, l.now())
	close(l.changed)
	l.changed = make(chan struct{})
}

// retune is b with the cap rate (0: none), its debt kept up to a second
// of the new rate (a window taken at a high cap does not stall a lowered
// one for long).
func retune(b *bucket, rate int64, now time.Time) *bucket {
	nb := newBucket(rate, now)
	if b != nil && nb != nil {
		b.refill(now)
		nb.tokens = max(min(b.tokens, nb.burst), -nb.rate)
	}
	return nb
}

// own waits out an export's own bucket (*b, nil: no cap; a reload may
// change it, under mu) and takes n bytes from it.
func own(ctx context.Context, b **bucket, mu *sync.Mutex, now func() time.Time, n int) error {
	for {
		mu.Lock()
		if *b == nil {
			mu.Unlock()
			return nil
		}
		d := (*b).wait(now())
		if d == 0 {
			(*b).tokens -= float64(n)
			mu.Unlock()
			return nil
		}
		mu.Unlock()
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// rate measures bytes per second over the last rateWindow seconds.
type rate struct {
	mu    sync.Mutex
	slots [rateWindow]uint64
	sec   int64 // the unix second of slots[sec%rateWindow]
}

const rateWindow = 10

func (r *rate) add(now time.Time, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.roll(now.Unix())
	r.slots[r.sec%rateWindow] += uint64(n)
}

func (r *rate) roll(s int64) {
	if s-r.sec >= rateWindow {
		r.slots = [rateWindow]uint64{}
	} else {
		for x := r.sec + 1; x <= s; x++ {
			r.slots[x%rateWindow] = 0
		}
	}
	if s > r.sec {
		r.sec = s
	}
}

// perSecond is the mean over the window's complete seconds.
func (r *rate) perSecond(now time.Time) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.roll(now.Unix())
	var sum uint64
	for i := range rateWindow {
		if int64(i) != r.sec%rateWindow {
			sum += r.slots[i]
		}
	}
	return float64(sum) / (rateWindow - 1)
}
