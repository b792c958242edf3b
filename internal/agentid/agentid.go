// Package agentid checks the identity fields agents give each other when
// they pair (package peer) or register (package registry): an agent_id,
// an Ed25519 public key in base64, an endpoint. Both take an agent's word
// for them only through these checks.
package agentid

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"

	"github.com/synapse-edge/synapse/wire"
)

// Check accepts an agent id that can name a peer (and an outbox
// destination).
func Check(id string) error {
	if id == "" || len(id) > 128 || strings.ContainsAny(id, " /\x00") || strings.IndexFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return fmt.Errorf("agent_id %q must be 1 to 128 bytes without spaces, slashes or control characters", id)
	}
	return nil
}

// DecodePublicKey decodes an Ed25519 public key in standard base64.
func DecodePublicKey(s string) (ed25519.PublicKey, error) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("public_key is not base64 of a %d-byte Ed25519 key", ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}

// CheckEndpoint accepts an absolute http or https base URL, or an agent
// on the MQTT broker (mqtt://[broker]/AGENT_ID), without query or fragment,
// and returns it without a trailing slash.
func CheckEndpoint(raw string) (string, error) {
	bad := func(why string) error {
		return wire.Errorf(wire.CodeInvalidParams, "endpoint %q %s", raw, why).With("field", "endpoint")
	}
	if raw == "" {
		return "", wire.Errorf(wire.CodeInvalidParams, `give the peer's base URL as {"endpoint": "http://host:port"}`).With("field", "endpoint")
	}
	if len(raw) > 2048 {
		return "", bad("is longer than 2048 bytes")
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", bad("is not a URL")
	case u.Scheme == "mqtt" || u.Scheme == "mqtts":
		// An agent on the MQTT broker (transport/mqtt): mqtt://[broker]/AGENT_ID.
		if id := strings.Trim(u.Path, "/"); id == "" || strings.Contains(id, "/") {
			return "", bad("must name the agent: mqtt://[broker]/AGENT_ID")
		}
		if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return "", bad("must not have a query, fragment or user info")
		}
	case u.Scheme != "http" && u.Scheme != "https":
		return "", bad("must be an http://, https:// or mqtt:// URL")
	case u.Host == "":
		return "", bad("has no host")
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return "", bad("must not have a query, fragment or user info")
	}
	return strings.TrimRight(raw, "/"), nil
}
