package selfupdate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/synapse-edge/synapse/internal/atomicfile"
)

// States of the state file.
const (
	StateTrial      = "trial"       // installed; the new binary has not yet been healthy
	StateOK         = "ok"          // the new binary reported SERVING in time
	StateRolledBack = "rolled_back" // the previous binary was put back (Reason says why)
	StateAborted    = "aborted"     // the swap did not finish; the binary was never replaced
)

// maxStateBytes bounds the state file a start reads.
const maxStateBytes = 64 << 10

// State is the state file NAME.update beside the binary: the last update
// and how it went. It is written atomically (internal/atomicfile).
type State struct {
	State string `json:"state"`
	// Binary is the path that was replaced, Previous the kept binary.
	Binary   string `json:"binary"`
	Previous string `json:"previous"`
	// SHA256 (hex) and Version are the new binary's; FromVersion the
	// binary's it replaced.
	SHA256      string `json:"sha256"`
	Version     string `json:"version"`
	FromVersion string `json:"from_version"`
	// Source says where it came from: file, url or mqtt (and the URL).
	Source               string `json:"source"`
	HealthTimeoutSeconds int    `json:"health_timeout_seconds"`
	// Attempts counts the starts of the new binary on trial.
	Attempts    int       `json:"attempts"`
	InstalledAt time.Time `json:"installed_at"`
	FinishedAt  time.Time `json:"finished_at,omitzero"`
	Reason      string    `json:"reason,omitempty"`
}

// StatePath is the state file of the binary at bin.
func StatePath(bin string) string { return bin + ".update" }

// PrevPath is where the previous binary of bin is kept.
func PrevPath(bin string) string { return bin + ".prev" }

// ReadState reads the state file of bin; (nil, nil) when there is none.
func ReadState(bin string) (*State, error) {
	f, err := os.Open(StatePath(bin))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var st State
	d := json.NewDecoder(&limitedReader{f, maxStateBytes})
	if err := d.Decode(&st); err != nil {
		return nil, fmt.Errorf("update state %s: %w", StatePath(bin), err)
	}
	switch st.State {
	case StateTrial, StateOK, StateRolledBack, StateAborted:
	default:
		return nil, fmt.Errorf("update state %s: unknown state %q", StatePath(bin), st.State)
	}
	return &st, nil
}

// writeState writes st as the state file of bin, durably.
func writeState(bin string, st *State) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(StatePath(bin), append(b, '\n'), 0o644)
}

// limitedReader fails a read past n bytes (io.LimitReader would end the
// file silently).
type limitedReader struct {
	f interface{ Read([]byte) (int, error) }
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, fmt.Errorf("more than %d bytes", maxStateBytes)
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.f.Read(p)
	l.n -= int64(n)
	return n, err
}
