package remoteupdate

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
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/synapse-edge/synapse/cli/remoteconfig/desired"
	"github.com/synapse-edge/synapse/internal/selfupdate"
)

// MaxDocument bounds a desired document, in bytes.
const MaxDocument = 16 << 10

// SignaturePrefix is the first line of a command's signature input.
const SignaturePrefix = "synapse-update-v1"

// Document is an update command.
type Document struct {
	AgentID string `json:"agent_id"`
	Version uint64 `json:"version"`
	URL     string `json:"url"`
	SHA256  string `json:"sha256"`
	// Minisig is the release's .minisig text.
	Minisig   string `json:"minisig"`
	Key       string `json:"key"`
	Signature string `json:"signature"`
}

var members = map[string]bool{"agent_id": true, "version": true, "url": true, "sha256": true, "minisig": true, "key": true, "signature": true}

// SignatureInput is what the operator key signs: the prefix, agent_id,
// version, url, sha256 and the SHA-256 (hex) of the minisig text, one a
// line, joined by "\n".
func SignatureInput(agentID string, version uint64, rawURL, sha string, minisig string) []byte {
	ms := sha256.Sum256([]byte(minisig))
	return []byte(strings.Join([]string{SignaturePrefix, agentID, strconv.FormatUint(version, 10), rawURL, strings.ToLower(sha), hex.EncodeToString(ms[:])}, "\n"))
}

// Decode reads a document and checks its shape (not its signature).
func Decode(raw []byte) (*Document, error) {
	if len(raw) > MaxDocument {
		return nil, fmt.Errorf("document of %d bytes, more than %d", len(raw), MaxDocument)
	}
	if !utf8.Valid(raw) {
		return nil, errors.New("document is not UTF-8")
	}
	if err := desired.OnceEach(raw, members); err != nil {
		return nil, err
	}
	var d Document
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	u, err := url.Parse(d.URL)
	switch {
	case d.AgentID == "" || len(d.AgentID) > 1024 || strings.ContainsAny(d.AgentID, "/+#\x00\n"):
		return nil, fmt.Errorf("agent_id %q is not an agent_id", d.AgentID)
	case d.Version < 1 || d.Version > 1<<53-1:
		return nil, fmt.Errorf("version %d is not from 1 to 2^53-1", d.Version)
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.ContainsAny(d.URL, "\n\x00"):
		return nil, fmt.Errorf("url %q is not an http or https URL", d.URL)
	case len(d.SHA256) != 64 || !isHex(d.SHA256):
		return nil, errors.New("sha256 is not 64 hex digits")
	case len(d.Minisig) == 0 || len(d.Minisig) > selfupdate.MaxSignatureBytes:
		return nil, errors.New("minisig is empty or too long")
	case d.Key == "" || d.Signature == "":
		return nil, errors.New("unsigned: no key or no signature")
	}
	if _, err := selfupdate.ParseSignature([]byte(d.Minisig)); err != nil {
		return nil, fmt.Errorf("minisig: %w", err)
	}
	return &d, nil
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

// Verify checks that d is for agentID and signed by one of keys.
func (d *Document) Verify(agentID string, keys []ed25519.PublicKey) error {
	if d.AgentID != agentID {
		return fmt.Errorf("the command is for agent %q, this is %q", d.AgentID, agentID)
	}
	k, err := base64.StdEncoding.DecodeString(d.Key)
	if err != nil || len(k) != ed25519.PublicKeySize {
		return errors.New("key is not base64 of a 32-byte Ed25519 key")
	}
	var key ed25519.PublicKey
	for _, p := range keys {
		if p.Equal(ed25519.PublicKey(k)) {
			key = p
		}
	}
	if key == nil {
		return fmt.Errorf("key %s is not one of update.operator_keys", d.Key)
	}
	sig, err := base64.StdEncoding.DecodeString(d.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return errors.New("signature is not base64 of 64 bytes")
	}
	if !ed25519.Verify(key, SignatureInput(d.AgentID, d.Version, d.URL, d.SHA256, d.Minisig), sig) {
		return fmt.Errorf("the signature does not verify with key %s", d.Key)
	}
	return nil
}

// Sign returns the document of an update command signed with priv.
func Sign(priv ed25519.PrivateKey, agentID string, version uint64, rawURL, sha, minisig string) ([]byte, error) {
	d := Document{AgentID: agentID, Version: version, URL: rawURL, SHA256: strings.ToLower(sha), Minisig: minisig,
		Key:       base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey)),
		Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(priv, SignatureInput(agentID, version, rawURL, sha, minisig)))}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	if _, err := Decode(b); err != nil {
		return nil, err
	}
	return b, nil
}
