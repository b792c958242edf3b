package config

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// RemoteConfig is the remote_config section: the agent takes signed
// config fragments from the broker (package cli/remoteconfig).
type RemoteConfig struct {
	// OperatorKeys are the Ed25519 public keys (base64, standard
	// alphabet, of the 32 bytes) one of which must have signed a
	// desired document; several, so that a key can be rotated.
	OperatorKeys []string `json:"operator_keys"`
}

// RemoteLocked are the top-level keys a remote config fragment may not
// set: the agent's identity, its data directory, the broker link the
// fragments come through, the keys that sign them and the keys that sign
// releases and update commands (update) stay in the file.
var RemoteLocked = []string{"agent_id", "system_id", "data_dir", "mqtt", "remote_config", "update"}

// Keys are the operator keys decoded.
func (r *RemoteConfig) Keys() ([]ed25519.PublicKey, error) {
	var keys []ed25519.PublicKey
	var errs []error
	for i, k := range r.OperatorKeys {
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(k))
		if err != nil || len(b) != ed25519.PublicKeySize {
			errs = append(errs, fmt.Errorf("config: remote_config.operator_keys[%d]: not base64 of a 32-byte Ed25519 public key (synapse config keygen prints one)", i))
			continue
		}
		if slices.ContainsFunc(keys, func(o ed25519.PublicKey) bool { return o.Equal(ed25519.PublicKey(b)) }) {
			errs = append(errs, fmt.Errorf("config: remote_config.operator_keys[%d]: the same key twice", i))
			continue
		}
		keys = append(keys, b)
	}
	return keys, errors.Join(errs...)
}

// checkRemote checks the remote_config section.
func (f *File) checkRemote() error {
	r := f.RemoteConfig
	if r == nil {
		return nil
	}
	var errs []error
	if len(r.OperatorKeys) == 0 {
		errs = append(errs, errors.New("config: remote_config.operator_keys: name at least one operator key"))
	}
	if _, err := r.Keys(); err != nil {
		errs = append(errs, err)
	}
	if f.MQTT == nil {
		errs = append(errs, errors.New("config: remote_config needs the mqtt section (the desired documents come through the broker)"))
	}
	return errors.Join(errs...)
}

// decodeOverlay decodes a remote config fragment (a JSON object; nil:
// none) over f, which holds the file at path, as a second file would be:
// each top-level key replaces the file's value, except that an object
// for a section merges into it key by key (Go's encoding/json); arrays
// replace. Unknown keys and RemoteLocked ones are errors.
func decodeOverlay(f *File, path string, overlay []byte) error {
	if overlay == nil {
		return nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(overlay, &top); err != nil {
		return fmt.Errorf("remote config: %w", err)
	}
	for _, k := range RemoteLocked {
		if _, ok := top[k]; ok {
			return fmt.Errorf("remote config: %s may not be set remotely (it stays in the config file)", k)
		}
	}
	d := json.NewDecoder(bytes.NewReader(overlay))
	d.DisallowUnknownFields()
	if err := d.Decode(f); err != nil {
		return decodeError("(remote config)", overlay, d.InputOffset(), err)
	}
	resolvePaths(f, path)
	return nil
}

// OverlaidHash is the configuration's hash: the SHA-256 (hex) of the
// file's bytes, or, with a remote config fragment, of the file's bytes,
// one NUL byte, and the fragment's bytes.
func OverlaidHash(file, overlay []byte) string {
	if overlay == nil {
		return hashOf(file)
	}
	h := sha256.New()
	h.Write(file)
	h.Write([]byte{0})
	h.Write(overlay)
	return hex.EncodeToString(h.Sum(nil))
}
