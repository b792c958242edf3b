package command

import (
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuf is a writer the progress goroutine and the test share.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncBuf) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuf) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestProgressLine: on a terminal the line shows what, the elapsed time and
// the detail, and is erased at the end; elsewhere nothing is written.
func TestProgressLine(t *testing.T) {
	t.Run("terminal", func(t *testing.T) {
		var errOut syncBuf
		s := &Session{IO: &IO{Err: &errOut}, IsTerm: func(io.Writer) bool { return true }}
		p := s.StartProgress("db backup")
		p.Set("1.5 MB")
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(errOut.String(), "1.5 MB") {
			if time.Now().After(deadline) {
				t.Fatalf("no progress line after 10s: %q", errOut.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		p.Stop()
		p.Stop() // safe twice
		got := errOut.String()
		if !strings.HasPrefix(got, "\rdb backup: ") || !strings.Contains(got, " s, 1.5 MB") || !strings.HasSuffix(got, "\r") {
			t.Errorf("progress output %q: want the line redrawn with \\r and erased at the end", got)
		}
	})
	t.Run("not a terminal", func(t *testing.T) {
		var errOut syncBuf
		s := &Session{IO: &IO{Err: &errOut}}
		p := s.StartProgress("db check")
		p.Set("x")
		p.Stop()
		if errOut.String() != "" {
			t.Errorf("wrote %q off a terminal", errOut.String())
		}
	})
}
