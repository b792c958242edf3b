package desired

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxDocument is the largest desired document taken, in bytes.
const MaxDocument = 64 << 10

// MaxVersion is the greatest version: JSON numbers are exact up to it in
// every language.
const MaxVersion = 1<<53 - 1

// SignaturePrefix is the first line of the signature input.
const SignaturePrefix = "synapse-config-v1"

// Reasons a desired document is refused (Refusal.Reason, and a report's
// reason): stable strings.
const (
	ReasonMalformed     = "malformed"      // not a document: JSON, members, sizes
	ReasonUnsigned      = "unsigned"       // no key or no signature
	ReasonUnknownKey    = "unknown_key"    // signed by a key that is not pinned
	ReasonBadSignature  = "bad_signature"  // the signature does not verify
	ReasonWrongAgent    = "wrong_agent"    // made for another agent_id
	ReasonStaleVersion  = "stale_version"  // not newer than the version applied
	ReasonLockedField   = "locked_field"   // sets a key of config.RemoteLocked (package cli/config)
	ReasonInvalidConfig = "invalid_config" // the file with the fragment over it has problems
	ReasonStoreFailed   = "store_failed"   // the document could not be kept on disk
)

// Reasons are every Reason, in the order of the README's table.
var Reasons = []string{ReasonMalformed, ReasonUnsigned, ReasonUnknownKey, ReasonBadSignature, ReasonWrongAgent,
	ReasonStaleVersion, ReasonLockedField, ReasonInvalidConfig, ReasonStoreFailed}

// Refusal is why a desired document was refused; nothing changed.
type Refusal struct {
	Reason string
	Err    error
}

func (r *Refusal) Error() string { return "remote config: " + r.Reason + ": " + r.Err.Error() }
func (r *Refusal) Unwrap() error { return r.Err }

// Refuse is a Refusal for reason, its error made as fmt.Errorf does.
func Refuse(reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Err: fmt.Errorf(format, args...)}
}

// Document is a desired document.
type Document struct {
	AgentID   string          `json:"agent_id"`
	Version   uint64          `json:"version"`
	Key       string          `json:"key"`
	Signature string          `json:"signature"`
	Config    json.RawMessage `json:"config"`
}

// members are a document's member names.
var members = map[string]bool{"agent_id": true, "version": true, "key": true, "signature": true, "config": true}

// Decode reads a desired document and checks its shape (not its
// signature: Verify). Every error is a *Refusal: malformed, or unsigned
// when the key or the signature is missing.
func Decode(raw []byte) (*Document, error) {
	if len(raw) > MaxDocument {
		return nil, Refuse(ReasonMalformed, "document of %d bytes, more than %d", len(raw), MaxDocument)
	}
	if err := OnceEach(raw, members); err != nil {
		return nil, Refuse(ReasonMalformed, "%v", err)
	}
	var d Document
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, Refuse(ReasonMalformed, "%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, Refuse(ReasonMalformed, "more than one JSON value")
	}
	switch {
	case d.AgentID == "" || len(d.AgentID) > 1024 || !utf8.ValidString(d.AgentID) || strings.ContainsAny(d.AgentID, "/+#\x00\n"):
		return nil, Refuse(ReasonMalformed, "agent_id %q is not an agent_id", d.AgentID)
	case d.Version < 1 || d.Version > MaxVersion:
		return nil, Refuse(ReasonMalformed, "version %d is not from 1 to %d", d.Version, uint64(MaxVersion))
	case len(d.Config) == 0 || d.Config[0] != '{':
		return nil, Refuse(ReasonMalformed, "config is not a JSON object")
	case d.Key == "" || d.Signature == "":
		return nil, Refuse(ReasonUnsigned, "the document has no key or no signature")
	}
	return &d, nil
}

// OnceEach checks that raw is a JSON object whose members are among
// members, each at most once (encoding/json would take the last of two).
// The update commands of cli/remoteupdate are checked with it too.
func OnceEach(raw []byte, members map[string]bool) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errors.New("a document is a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := t.(string)
		if !members[k] {
			return fmt.Errorf("unknown member %q", k)
		}
		if seen[k] {
			return fmt.Errorf("member %q twice", k)
		}
		seen[k] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	return nil
}

// SignatureInput is the bytes a document's signature is over.
func SignatureInput(agentID string, version uint64, config []byte) []byte {
	sum := sha256.Sum256(config)
	return []byte(SignaturePrefix + "\n" + agentID + "\n" + strconv.FormatUint(version, 10) + "\n" + hex.EncodeToString(sum[:]))
}

// Verify checks that d is for agentID and signed by one of keys. Every
// error is a *Refusal.
func (d *Document) Verify(agentID string, keys []ed25519.PublicKey) error {
	if d.AgentID != agentID {
		return Refuse(ReasonWrongAgent, "the document is for agent %q, this is %q", d.AgentID, agentID)
	}
	k, err := base64.StdEncoding.DecodeString(d.Key)
	if err != nil || len(k) != ed25519.PublicKeySize {
		return Refuse(ReasonUnknownKey, "key is not base64 of a 32-byte Ed25519 key")
	}
	var key ed25519.PublicKey
	for _, p := range keys {
		if p.Equal(ed25519.PublicKey(k)) {
			key = p
		}
	}
	if key == nil {
		return Refuse(ReasonUnknownKey, "key %s is not one of remote_config.operator_keys", d.Key)
	}
	sig, err := base64.StdEncoding.DecodeString(d.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return Refuse(ReasonBadSignature, "signature is not base64 of 64 bytes")
	}
	if !ed25519.Verify(key, SignatureInput(d.AgentID, d.Version, d.Config), sig) {
		return Refuse(ReasonBadSignature, "the signature does not verify with key %s", d.Key)
	}
	return nil
}

// Sign returns the desired document of config (a JSON object, taken as
// its compact form) for agentID at version, signed with priv.
func Sign(priv ed25519.PrivateKey, agentID string, version uint64, config []byte) ([]byte, error) {
	var c bytes.Buffer
	if err := json.Compact(&c, config); err != nil {
		return nil, fmt.Errorf("config fragment: %w", err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(c.Bytes(), &obj); err != nil {
		return nil, errors.New("config fragment: not a JSON object")
	}
	if version < 1 || version > MaxVersion {
		return nil, fmt.Errorf("version %d is not from 1 to %d", version, uint64(MaxVersion))
	}
	pub := priv.Public().(ed25519.PublicKey)
	sig := ed25519.Sign(priv, SignatureInput(agentID, version, c.Bytes()))
	id, err := json.Marshal(agentID)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, `{"agent_id":%s,"version":%d,"key":"%s","signature":"%s","config":%s}`, id, version,
		base64.StdEncoding.EncodeToString(pub), base64.StdEncoding.EncodeToString(sig), c.Bytes())
	if _, err := Decode(out.Bytes()); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
