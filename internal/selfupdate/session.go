package selfupdate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// healthPoll is how often a binary on trial asks for its health.
const healthPoll = 50 * time.Millisecond

// startFault, set only by the build tag synapse_startfault (startfault.go,
// for the tests' release that crashes at start), exits the process right
// after a trial start was counted. A release is never built with it.
var startFault bool

// Options are what a serve's Session is begun with.
type Options struct {
	// Version is the running binary's.
	Version string
	// Config is the config's update section (nil: the defaults).
	Config *Config
	Log    *slog.Logger
	// Binary is the running binary's path; "" means os.Executable's.
	Binary string
	// Argv is what a restart runs the binary with; nil means os.Args.
	Argv []string
}

// Session is one serve's part in updates: it settles a trial at start,
// watches the health of a binary on trial, and restarts the process when
// an update or a rollback asks for it (SIGUSR2 asks too).
type Session struct {
	bin   string
	argv  []string
	mode  string
	log   *slog.Logger
	start time.Time

	mu      sync.Mutex
	trial   *State // the state while this binary is on trial
	restart string // why a restart is wanted; "" none
	cancel  context.CancelFunc
	stopSig func()
	settled func(State) // OnSettled's
}

// OnSettled sets f to be called (once, from the watch) when the trial of
// this binary ends: committed or rolled back.
func (s *Session) OnSettled(f func(State)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settled = f
}

// Current is the state file as this start left it (nil: none).
func (s *Session) Current() *State {
	if s.bin == "" {
		return nil
	}
	st, _ := ReadState(s.bin)
	return st
}

// Executable is the running binary's path, its symbolic links resolved.
func Executable() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(p)
}

// Begin settles the state file at the start of serve. A binary whose
// earlier trial start died is rolled back here: Restarting is then true
// and End starts the previous binary. A state file that cannot be read
// or written is logged and the binary serves: an update's bookkeeping
// never stops an agent from serving (and a failure there never loops).
func Begin(o Options) (*Session, error) {
	s := &Session{argv: o.Argv, mode: o.Config.RestartMode(), log: o.Log, start: time.Now()}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.argv == nil {
		s.argv = os.Args
	}
	s.bin = o.Binary
	if s.bin == "" {
		var err error
		if s.bin, err = Executable(); err != nil {
			s.log.Warn("update: the running binary's path is unknown; updates and rollbacks are off", "err", err)
			return s, nil
		}
	}
	st, err := ReadState(s.bin)
	if err != nil {
		s.log.Warn("update: the state file is unreadable; ignored", "err", err)
		return s, nil
	}
	if st == nil {
		return s, nil
	}
	if st.State != StateTrial {
		s.log.Info("update: last update", "state", st.State, "version", st.Version, "from_version", st.FromVersion, "reason", st.Reason)
		return s, nil
	}
	sum, err := fileSHA256(s.bin)
	if err != nil {
		s.log.Error("update: cannot hash the running binary; no trial", "err", err)
		return s, nil
	}
	if sum != st.SHA256 {
		st.State, st.FinishedAt = StateAborted, time.Now().UTC()
		st.Reason = "the swap did not finish: the binary in place is not the update's"
		s.log.Warn("update: aborted", "reason", st.Reason, "version", o.Version)
		if err := writeState(s.bin, st); err != nil {
			s.log.Error("update: write the state file", "err", err)
		}
		return s, nil
	}
	if st.Attempts >= 1 {
		reason := fmt.Sprintf("version %s did not report SERVING: its start %d ended (it exited, crashed or was killed) before it did", st.Version, st.Attempts)
		if err := restore(s.bin, st, reason); err != nil {
			// Serving the new binary beats a restart loop.
			s.log.Error("update: cannot roll back; serving the new binary", "version", st.Version, "reason", reason, "err", err)
			return s, nil
		}
		s.log.Error("update: rolled back", "version", st.Version, "to_version", st.FromVersion, "reason", reason)
		s.restart = "rollback to " + st.FromVersion
		s.mode = RestartExec // nothing is open yet
		return s, nil
	}
	st.Attempts++
	if err := writeState(s.bin, st); err != nil {
		// Without the count a crash could not be told from a first
		// start: no trial (README: Updating, the directory must be the
		// agent's to write).
		s.log.Error("update: cannot record the trial start, so no rollback is possible; serving", "version", st.Version, "err", err)
		return s, nil
	}
	s.trial = st
	s.log.Info("update: on trial", "version", st.Version, "from_version", st.FromVersion, "health_timeout", time.Duration(st.HealthTimeoutSeconds)*time.Second)
	if startFault {
		os.Exit(3)
	}
	return s, nil
}

// Restarting says the process is to restart at once (Begin rolled back).
func (s *Session) Restarting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restart != ""
}

// Binary is the running binary's path.
func (s *Session) Binary() string { return s.bin }

// Context returns parent, cancelled too when a restart is asked for
// (SIGUSR2, a failed trial, an installed update).
func (s *Session) Context(parent context.Context) context.Context {
	ctx, cancel := context.WithCancel(parent)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR2)
	stop := make(chan struct{})
	go func() {
		select {
		case <-sig:
			s.log.Info("update: SIGUSR2: restarting", "binary", s.bin, "mode", s.mode)
			s.RequestRestart("SIGUSR2")
		case <-stop:
		case <-ctx.Done():
		}
	}()
	s.mu.Lock()
	s.cancel = cancel
	s.stopSig = func() { signal.Stop(sig); close(stop) }
	s.mu.Unlock()
	return ctx
}

// RequestRestart ends serve (its Context) for a restart into the binary
// in place.
func (s *Session) RequestRestart(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.restart == "" {
		s.restart = reason
	}
	if s.cancel != nil {
		s.cancel()
	}
}

// Watch watches the health of a binary on trial (healthy is nil while it
// serves): SERVING before its health timeout commits the update, else the
// previous binary is put back and serve ends for a restart. Without a
// trial it does nothing.
func (s *Session) Watch(ctx context.Context, healthy func() error) {
	s.mu.Lock()
	st := s.trial
	s.mu.Unlock()
	if st == nil {
		return
	}
	deadline := s.start.Add(time.Duration(st.HealthTimeoutSeconds) * time.Second)
	go func() {
		t := time.NewTicker(healthPoll)
		defer t.Stop()
		var last error
		for {
			if last = healthy(); last == nil {
				s.settle(func(st *State) error {
					st.State, st.FinishedAt = StateOK, time.Now().UTC()
					s.log.Info("update: committed", "version", st.Version, "from_version", st.FromVersion, "healthy_after", time.Since(s.start).Round(time.Millisecond))
					return writeState(s.bin, st)
				})
				return
			}
			if time.Now().After(deadline) {
				s.fail(fmt.Sprintf("version %s did not report SERVING within %ds: %v", st.Version, st.HealthTimeoutSeconds, last))
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// settle ends the trial with f, once.
func (s *Session) settle(f func(*State) error) bool {
	s.mu.Lock()
	st := s.trial
	s.trial = nil
	s.mu.Unlock()
	if st == nil {
		return false
	}
	if err := f(st); err != nil {
		s.log.Error("update: write the state file", "err", err)
	}
	s.mu.Lock()
	cb := s.settled
	s.mu.Unlock()
	if cb != nil && st.State != StateTrial {
		cb(*st)
	}
	return true
}

// fail rolls a trial back and asks for the restart into the previous
// binary.
func (s *Session) fail(reason string) {
	var restored error
	if !s.settle(func(st *State) error {
		restored = restore(s.bin, st, reason)
		s.log.Error("update: rolled back", "version", st.Version, "to_version", st.FromVersion, "reason", reason, "err", restored)
		return nil
	}) {
		return
	}
	if restored == nil {
		s.RequestRestart("rollback: " + reason)
	}
}

// End is called with serve's outcome. A trial whose serve failed is
// rolled back; a restart asked for happens here: exec replaces the
// process (End returns only if that fails), exit returns ExitRestart. A
// clean stop during a trial does not count as a failed start. Otherwise
// it returns (0, serveErr).
func (s *Session) End(serveErr error) (int, error) {
	s.mu.Lock()
	if s.stopSig != nil {
		s.stopSig()
	}
	s.mu.Unlock()
	if serveErr != nil {
		s.fail(fmt.Sprintf("serve failed on trial: %v", serveErr))
	} else {
		s.settle(func(st *State) error {
			st.Attempts--
			return writeState(s.bin, st)
		})
	}
	s.mu.Lock()
	reason, mode := s.restart, s.mode
	s.mu.Unlock()
	if reason == "" {
		return 0, serveErr
	}
	if mode == RestartExit {
		s.log.Info("update: exiting for the service manager to restart", "binary", s.bin, "reason", reason, "code", ExitRestart)
		return ExitRestart, nil
	}
	s.log.Info("update: restarting (exec)", "binary", s.bin, "reason", reason)
	err := syscall.Exec(s.bin, s.argv, os.Environ())
	return 1, errors.Join(fmt.Errorf("update: exec %s: %w", s.bin, err), serveErr)
}
