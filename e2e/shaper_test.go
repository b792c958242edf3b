package e2e_test

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// shaper is a TCP proxy to target that shapes the bytes going towards
// target to rate bytes per second (a token bucket over all connections,
// 4 KiB deep) and counts them per shaperSlot, so a test can read the
// rate on the wire over any window. The answers come back unshaped.
// (toxiproxy's bandwidth toxic does the same; its module is not among
// the dependencies to be had here.)
type shaper struct {
	ln     net.Listener
	target string
	rate   float64

	mu     sync.Mutex
	tokens float64
	last   time.Time
	t0     time.Time
	slots  []int64
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

const shaperSlot = 100 * time.Millisecond

func newShaper(t *testing.T, target string, rate int) *shaper {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &shaper{ln: ln, target: target, rate: float64(rate), last: time.Now(), t0: time.Now(), conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

func (s *shaper) addr() string { return s.ln.Addr().String() }

func (s *shaper) close() {
	_ = s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *shaper) track(c net.Conn, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		s.conns[c] = struct{}{}
	} else {
		delete(s.conns, c)
	}
}

func (s *shaper) accept() {
	defer s.wg.Done()
	for {
		in, err := s.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.DialTimeout("tcp", s.target, 2*time.Second)
		if err != nil { // the upstream is down: so is the link
			_ = in.Close()
			continue
		}
		s.track(in, true)
		s.track(out, true)
		s.wg.Add(2)
		go func() {
			defer s.wg.Done()
			s.shapedCopy(out, in)
			_ = out.Close()
			_ = in.Close()
			s.track(in, false)
		}()
		go func() {
			defer s.wg.Done()
			_, _ = io.Copy(in, out)
			_ = in.Close()
			_ = out.Close()
			s.track(out, false)
		}()
	}
}

// shapedCopy copies src to dst at the shaper's rate.
func (s *shaper) shapedCopy(dst io.Writer, src io.Reader) {
	buf := make([]byte, 1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			s.take(n)
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// take waits until n bytes may go, and counts them.
func (s *shaper) take(n int) {
	for {
		s.mu.Lock()
		now := time.Now()
		s.tokens = min(s.tokens+now.Sub(s.last).Seconds()*s.rate, 4096)
		s.last = now
		if s.tokens >= float64(n) {
			s.tokens -= float64(n)
			i := int(now.Sub(s.t0) / shaperSlot)
			for len(s.slots) <= i {
				s.slots = append(s.slots, 0)
			}
			s.slots[i] += int64(n)
			s.mu.Unlock()
			return
		}
		d := time.Duration((float64(n) - s.tokens) / s.rate * float64(time.Second))
		s.mu.Unlock()
		time.Sleep(max(d, time.Millisecond))
	}
}

// slot is the index of the slot of t.
func (s *shaper) slot(t time.Time) int { return int(t.Sub(s.t0) / shaperSlot) }

// window returns the bytes per second over slots [from, to), and the
// highest rate of any 10 s window inside it.
func (s *shaper) window(from, to int) (mean, max10 float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	to = min(to, len(s.slots))
	if to <= from {
		return 0, 0
	}
	var sum int64
	for _, v := range s.slots[from:to] {
		sum += v
	}
	mean = float64(sum) / (float64(to-from) * shaperSlot.Seconds())
	w := int(10 * time.Second / shaperSlot)
	for i := from; i+w <= to; i++ {
		var x int64
		for _, v := range s.slots[i : i+w] {
			x += v
		}
		max10 = max(max10, float64(x)/10)
	}
	return mean, max10
}
