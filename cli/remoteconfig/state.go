package remoteconfig

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/synapse-edge/synapse/cli/config"
	"github.com/synapse-edge/synapse/cli/remoteconfig/desired"
	"github.com/synapse-edge/synapse/internal/atomicfile"
)

// StateFile is the file in the data directory that holds the exact bytes
// of the last desired document applied. It is read before the agent is
// built (its fragment is part of the configuration the agent starts
// with, the fields that need a restart included), so it cannot be in the
// store, which opens later; and it is in the data directory, which the
// agent writes, not beside the config file, which is often read-only for
// it (/etc).
const StateFile = "remote-config.json"

// readState returns the document kept in dir (nil, nil: none).
func readState(dir string) (*desired.Document, []byte, error) {
	raw, err := os.ReadFile(filepath.Join(dir, StateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("remote config: %w", err)
	}
	d, err := desired.Decode(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("remote config: %s: %w", StateFile, err)
	}
	return d, raw, nil
}

// writeState keeps raw, a desired document, in dir: written atomically
// and synced (internal/atomicfile), so a power cut leaves the old
// document or the new one.
func writeState(dir string, raw []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("remote config: %w", err)
	}
	return atomicfile.Write(filepath.Join(dir, StateFile), raw, 0o600)
}

// Start is what serve starts with when the config file has a
// remote_config section: the file with the kept document's fragment
// over it.
type Start struct {
	File    config.File
	Hash    string
	Overlay []byte // the fragment in force (nil: none)
	Version uint64 // its version
}

// AtStart reads the document kept in file's data directory and returns
// the configuration to start with: file (read from path, its hash hash,
// serve's flags applied) alone when there is no document, or the file
// with the document's fragment over it (read again, flags applied). A
// kept document that no longer verifies (its key was removed from
// operator_keys) or that no longer fits the file is logged and left out:
// the agent starts on the file alone, rather than not at all.
func AtStart(path string, file config.File, hash string, flags func(*config.File), getenv func(string) string, log *slog.Logger) Start {
	st := Start{File: file, Hash: hash}
	if file.RemoteConfig == nil {
		return st
	}
	d, _, err := readState(file.DataDir)
	if err != nil {
		log.Error("remote config: the kept document cannot be read; starting on the config file alone", "err", err)
		return st
	}
	if d == nil {
		return st
	}
	keys, _ := file.RemoteConfig.Keys()
	if err := d.Verify(d.AgentID, keys); err != nil {
		log.Error("remote config: the kept document does not verify; starting on the config file alone", "version", d.Version, "err", err)
		return st
	}
	next, h, err := config.LoadOverlaid(path, d.Config, getenv)
	if err == nil {
		flags(&next)
		err = errors.Join(next.Config.Validate())
	}
	if err != nil {
		log.Error("remote config: the kept document does not fit the config file; starting on the file alone", "version", d.Version, "err", err)
		return st
	}
	log.Info("remote config: in force", "version", d.Version, "hash", h)
	return Start{File: next, Hash: h, Overlay: d.Config, Version: d.Version}
}

// keysOf decodes keys checked by the config's validation.
func keysOf(r *config.RemoteConfig) []ed25519.PublicKey {
	if r == nil {
		return nil
	}
	k, _ := r.Keys()
	return k
}
