package cli

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"
)

// progressEvery is how often a progress line is redrawn, and how long
// work runs before the line first shows.
const progressEvery = 500 * time.Millisecond

// progress is one line on standard error, when that is a terminal, that
// says what long work is doing ("db backup: 3.5 s, 120 MB"), redrawn in
// place until done erases it. Off a terminal it prints nothing.
type progress struct {
	detail atomic.Pointer[string]
	stopc  chan struct{}
	done   chan struct{}
}

// startProgress starts the line of what; detail, if not nil, is called at
// each redraw for the text after the elapsed time.
func startProgress(s *session, what string) *progress {
	p := &progress{}
	if !s.terminal(s.io.Err) {
		return p
	}
	p.stopc, p.done = make(chan struct{}), make(chan struct{})
	start := time.Now()
	go func() {
		defer close(p.done)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		drawn := 0
		for {
			select {
			case <-p.stopc:
				if drawn > 0 {
					fmt.Fprintf(s.io.Err, "\r%s\r", strings.Repeat(" ", drawn))
				}
				return
			case <-t.C:
			}
			line := fmt.Sprintf("%s: %.1f s", what, time.Since(start).Seconds())
			if d := p.detail.Load(); d != nil && *d != "" {
				line += ", " + *d
			}
			fmt.Fprintf(s.io.Err, "\r%s%s", line, strings.Repeat(" ", max(drawn-len(line), 0)))
			drawn = len(line)
		}
	}()
	return p
}

// set changes the detail shown after the elapsed time.
func (p *progress) set(detail string) { p.detail.Store(&detail) }

// stop erases the line; safe to call on a line that never showed.
func (p *progress) stop() {
	if p.stopc == nil {
		return
	}
	close(p.stopc)
	<-p.done
	p.stopc = nil
}

// terminal reports whether w is a terminal (tests may say so of a buffer).
func (s *session) terminal(w io.Writer) bool {
	if s.isTerm != nil {
		return s.isTerm(w)
	}
	return isTerminal(w)
}
