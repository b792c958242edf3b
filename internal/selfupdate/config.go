package selfupdate

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Restart modes: how the agent starts the binary it installed or put
// back.
const (
	// RestartExec replaces the process with the binary (syscall.Exec):
	// the same pid, arguments and environment.
	RestartExec = "exec"
	// RestartExit exits with ExitRestart for the service manager to start
	// the binary again (systemd's Restart=on-failure does).
	RestartExit = "exit"
)

// ExitRestart is the exit code of RestartExit (EX_TEMPFAIL): not 0, so
// Restart=on-failure restarts.
const ExitRestart = 75

// Defaults of Config.
const (
	DefaultHealthTimeout = 30 * time.Second
	DefaultMaxBytes      = 256 << 20
)

// Config is the config file's "update" section.
type Config struct {
	// ReleaseKeys are the trusted release public keys: the base64 line
	// of a minisign .pub file each ("RWQ..."). Several let a key be
	// rotated.
	ReleaseKeys []string `json:"release_keys,omitempty"`
	// ReleaseKeysFile is a minisign .pub file (one key or several),
	// relative to the config file's directory; its keys add to
	// ReleaseKeys.
	ReleaseKeysFile string `json:"release_keys_file,omitempty"`
	// HealthTimeoutSeconds is how long a new binary has to report
	// SERVING before it is rolled back; 0 means 30.
	HealthTimeoutSeconds int `json:"health_timeout_seconds,omitempty"`
	// Restart is "exec" (the default) or "exit" (under a service manager
	// that restarts: build/synapse.service).
	Restart string `json:"restart,omitempty"`
	// MaxBytes caps a download; 0 means 256 MiB.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// OperatorKeys are the Ed25519 public keys (base64 of the 32 bytes)
	// one of which must sign an update command from the broker
	// (cli/remoteupdate); none: the agent takes no update command.
	OperatorKeys []string `json:"operator_keys,omitempty"`

	// dir is the config file's directory, for ReleaseKeysFile.
	dir string
}

// SetDir sets the directory a relative ReleaseKeysFile is read from (the
// config file's).
func (c *Config) SetDir(dir string) {
	if c != nil {
		c.dir = dir
	}
}

// Validate checks the section's values and reads release_keys_file.
func (c *Config) Validate() error {
	if c == nil {
		return nil
	}
	var errs []error
	for i, k := range c.ReleaseKeys {
		if _, err := ParsePublicKey(k); err != nil {
			errs = append(errs, fmt.Errorf("update.release_keys[%d]: %w", i, err))
		}
	}
	if c.ReleaseKeysFile != "" {
		if _, err := (&Config{ReleaseKeysFile: c.ReleaseKeysFile, dir: c.dir}).Keys(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.HealthTimeoutSeconds < 0 || c.HealthTimeoutSeconds > 3600 {
		errs = append(errs, fmt.Errorf("update.health_timeout_seconds: %d is not between 0 and 3600", c.HealthTimeoutSeconds))
	}
	switch c.Restart {
	case "", RestartExec, RestartExit:
	default:
		errs = append(errs, fmt.Errorf("update.restart: %q is not exec or exit", c.Restart))
	}
	for i, k := range c.OperatorKeys {
		if b, err := base64.StdEncoding.DecodeString(k); err != nil || len(b) != ed25519.PublicKeySize {
			errs = append(errs, fmt.Errorf("update.operator_keys[%d]: not base64 of a 32-byte Ed25519 public key", i))
		}
	}
	if c.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("update.max_bytes: %d is negative", c.MaxBytes))
	}
	return errors.Join(errs...)
}

// HealthTimeout is HealthTimeoutSeconds as a duration, with its default.
func (c *Config) HealthTimeout() time.Duration {
	if c == nil || c.HealthTimeoutSeconds == 0 {
		return DefaultHealthTimeout
	}
	return time.Duration(c.HealthTimeoutSeconds) * time.Second
}

// RestartMode is Restart with its default.
func (c *Config) RestartMode() string {
	if c == nil || c.Restart == "" {
		return RestartExec
	}
	return c.Restart
}

// Max is MaxBytes with its default.
func (c *Config) Max() int64 {
	if c == nil || c.MaxBytes == 0 {
		return DefaultMaxBytes
	}
	return c.MaxBytes
}

// Keys returns the trusted release keys: ReleaseKeys and those of
// ReleaseKeysFile. None is an error: an agent without a release key
// accepts no update.
func (c *Config) Keys() ([]PublicKey, error) {
	if c == nil {
		return nil, errors.New("no release key: the config has no \"update\" section with release_keys or release_keys_file")
	}
	var keys []PublicKey
	for i, s := range c.ReleaseKeys {
		k, err := ParsePublicKey(s)
		if err != nil {
			return nil, fmt.Errorf("update.release_keys[%d]: %w", i, err)
		}
		keys = append(keys, k)
	}
	if c.ReleaseKeysFile != "" {
		path := c.ReleaseKeysFile
		if !filepath.IsAbs(path) && c.dir != "" {
			path = filepath.Join(c.dir, path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("update.release_keys_file: %w", err)
		}
		fk, err := ParsePublicKeys(string(b))
		if err != nil {
			return nil, fmt.Errorf("update.release_keys_file %s: %w", path, err)
		}
		keys = append(keys, fk...)
	}
	if len(keys) == 0 {
		return nil, errors.New("no release key: set update.release_keys or update.release_keys_file in the config")
	}
	return keys, nil
}

// Operators returns the operator keys decoded (Validate checked them).
func (c *Config) Operators() []ed25519.PublicKey {
	if c == nil {
		return nil
	}
	var keys []ed25519.PublicKey
	for _, k := range c.OperatorKeys {
		if b, err := base64.StdEncoding.DecodeString(k); err == nil && len(b) == ed25519.PublicKeySize {
			keys = append(keys, ed25519.PublicKey(b))
		}
	}
	return keys
}
