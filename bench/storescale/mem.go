package storescale

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// Mem is one reading of /proc/PID/smaps_rollup, in bytes.
type Mem struct {
	Rss, PssAnon, RssFile int64
}

// ReadMem reads the memory of process pid.
func ReadMem(pid int) (Mem, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return Mem{}, err
	}
	return parseRollup(raw)
}

func parseRollup(raw []byte) (Mem, error) {
	var m Mem
	var seen int
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		name, rest, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		var dst *int64
		switch string(name) {
		case "Rss":
			dst = &m.Rss
		case "Pss_Anon":
			dst = &m.PssAnon
		case "Pss_File":
			dst = &m.RssFile
		default:
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return Mem{}, fmt.Errorf("smaps_rollup line %q", sc.Text())
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return Mem{}, fmt.Errorf("smaps_rollup line %q: %w", sc.Text(), err)
		}
		*dst = kb << 10
		seen++
	}
	if seen < 3 {
		return Mem{}, fmt.Errorf("smaps_rollup without Rss, Pss_Anon and Pss_File")
	}
	return m, nil
}

// Sampler reads a process's memory every interval and keeps the peaks.
type Sampler struct {
	mu      sync.Mutex
	peak    Mem
	n       int
	lastErr error
	stop    chan struct{}
	done    chan struct{}
}

// Sample starts sampling pid every interval until Stop.
func Sample(pid int, every time.Duration) *Sampler {
	s := &Sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			s.read(pid)
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *Sampler) read(pid int) {
	m, err := ReadMem(pid)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.lastErr = err
		return
	}
	s.n++
	s.peak.Rss = max(s.peak.Rss, m.Rss)
	s.peak.PssAnon = max(s.peak.PssAnon, m.PssAnon)
	s.peak.RssFile = max(s.peak.RssFile, m.RssFile)
}

// Stop ends the sampling and returns the peaks and the number of
// readings; an error when there was none.
func (s *Sampler) Stop() (Mem, int, error) {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == 0 {
		return Mem{}, 0, fmt.Errorf("no memory reading: %v", s.lastErr)
	}
	return s.peak, s.n, nil
}
