package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of utime and stime in /proc/PID/stat: USER_HZ, 100
// on every Linux architecture Go supports.
const userHZ = 100

// errNoProc: /proc/PID cannot be read (not Linux, or the process is gone).
var errNoProc = errors.New("process not readable")

// procRSS is the resident set of pid in bytes (VmRSS).
func procRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("%w: %w", errNoProc, err)
	}
	for line := range bytes.Lines(b) {
		rest, ok := bytes.CutPrefix(line, []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := strings.Fields(string(rest))
		if len(f) != 2 || f[1] != "kB" {
			break
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			break
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("%w: no VmRSS line for pid %d", errNoProc, pid)
}

// procCPU is the user plus system CPU time pid has used.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("%w: %w", errNoProc, err)
	}
	// The command name (field 2) may hold spaces; fields count from its ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("%w: malformed stat of pid %d", errNoProc, pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("%w: short stat of pid %d", errNoProc, pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("%w: stat of pid %d: %w", errNoProc, pid, err)
	}
	return time.Duration(ut+st) * time.Second / userHZ, nil
}

// procWriteBytes is what pid has caused to be written to storage
// (write_bytes of /proc/PID/io: the page cache's dirtied pages, whole
// pages, as they are dirtied).
func procWriteBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, fmt.Errorf("%w: %w", errNoProc, err)
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte("write_bytes:")); ok {
			return strconv.ParseInt(strings.TrimSpace(string(rest)), 10, 64)
		}
	}
	return 0, fmt.Errorf("%w: no write_bytes line for pid %d", errNoProc, pid)
}

// sampler records the largest RSS of a process every 100 ms, and its CPU
// time and bytes written between start and stop.
type sampler struct {
	pid     int
	cpu0    time.Duration
	wb0     int64 // -1: unknown
	wb      int64
	maxRSS  int64
	stopped chan struct{}
	done    chan struct{}
}

// sample starts sampling pid; pid 0 gives a sampler that records nothing.
func sample(pid int) *sampler {
	s := &sampler{pid: pid, stopped: make(chan struct{}), done: make(chan struct{})}
	if pid == 0 {
		close(s.done)
		return s
	}
	s.cpu0, _ = procCPU(pid)
	s.maxRSS, _ = procRSS(pid)
	var err error
	if s.wb0, err = procWriteBytes(pid); err != nil {
		s.wb0 = -1
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stopped:
				return
			case <-t.C:
				if rss, err := procRSS(pid); err == nil {
					s.maxRSS = max(s.maxRSS, rss)
				}
			}
		}
	}()
	return s
}

// stop ends sampling and returns the largest RSS seen and the CPU time
// used since sample (both 0 for pid 0).
func (s *sampler) stop() (maxRSS int64, cpu time.Duration) {
	if s.pid == 0 {
		return 0, 0
	}
	close(s.stopped)
	<-s.done
	if rss, err := procRSS(s.pid); err == nil {
		s.maxRSS = max(s.maxRSS, rss)
	}
	if c, err := procCPU(s.pid); err == nil {
		cpu = c - s.cpu0
	}
	if wb, err := procWriteBytes(s.pid); err == nil && s.wb0 >= 0 {
		s.wb = wb - s.wb0
	}
	return s.maxRSS, cpu
}

// written is what the process wrote between sample and stop (0 when it
// could not be read). A write the process makes after the run (the
// agent's next checkpoint) is not in it.
func (s *sampler) written() int64 { return s.wb }
