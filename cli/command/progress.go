package command

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// progressEvery is how often a progress line is redrawn, and how long
// work runs before the line first shows.
const progressEvery = 500 * time.Millisecond

// Progress is one line on standard error, when that is a terminal, that
// says what long work is doing ("db backup: 3.5 s, 120 MB"), redrawn in
// place until Stop erases it. Off a terminal it prints nothing.
type Progress struct {
	detail atomic.Pointer[string]
	stopc  chan struct{}
	done   chan struct{}
}

// StartProgress starts the line of what; Set changes the text after the
// elapsed time.
func (s *Session) StartProgress(what string) *Progress {
	p := &Progress{}
	if !s.Terminal(s.IO.Err) {
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
					fmt.Fprintf(s.IO.Err, "\r%s\r", strings.Repeat(" ", drawn))
				}
				return
			case <-t.C:
			}
			line := fmt.Sprintf("%s: %.1f s", what, time.Since(start).Seconds())
			if d := p.detail.Load(); d != nil && *d != "" {
				line += ", " + *d
			}
			fmt.Fprintf(s.IO.Err, "\r%s%s", line, strings.Repeat(" ", max(drawn-len(line), 0)))
			drawn = len(line)
		}
	}()
	return p
}

// Set changes the detail shown after the elapsed time.
func (p *Progress) Set(detail string) { p.detail.Store(&detail) }

// Stop erases the line; safe to call on a line that never showed, and twice.
func (p *Progress) Stop() {
	if p.stopc == nil {
		return
	}
	close(p.stopc)
	<-p.done
	p.stopc = nil
}

// Terminal reports whether w is a terminal (tests may say so of a buffer
// with IsTerm).
func (s *Session) Terminal(w io.Writer) bool {
	if s.IsTerm != nil {
		return s.IsTerm(w)
	}
	return IsTerminal(w)
}

// IsTerminal reports whether w is a character device such as a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
