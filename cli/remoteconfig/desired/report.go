package desired

import (
	"crypto/ed25519"
	"errors"
	"fmt"

	"github.com/synapse-edge/synapse/wire"
)

// MsgConfigReported is the message_type of a reported document.
const MsgConfigReported wire.MessageType = "config_reported"

// Results of a desired document (Report.Result).
const (
	ResultApplied = "applied"
	ResultRefused = "refused"
)

// Report is a reported document's payload: the answer to the last desired
// document the agent took.
type Report struct {
	// Version is the version of the remote config in force (0: none).
	Version uint64 `json:"version"`
	// DesiredVersion is the version of the document this answers (0 when
	// it could not be read).
	DesiredVersion uint64 `json:"desired_version"`
	// Result is ResultApplied or ResultRefused (then nothing changed).
	Result string `json:"result"`
	// Reason is why it was refused (one of the Reason constants).
	Reason string `json:"reason,omitempty"`
	// Problems are what was wrong, in words; for invalid_config every
	// problem as synapse config check prints it.
	Problems []string `json:"problems"`
	// ConfigHash is the configuration in force (the hash /health shows:
	// config.OverlaidHash).
	ConfigHash string `json:"config_hash"`
	// Applied names the live fields the document changed;
	// RestartRequired the fields it changed that take effect at the next
	// restart (the document is kept, so they do then).
	Applied         []string `json:"applied"`
	RestartRequired []string `json:"restart_required"`
}

// ParseReport decodes a reported document and checks its signature with
// key, the agent's public key (its identity's, or its card's).
func ParseReport(raw []byte, key ed25519.PublicKey) (*wire.UnifiedSynapseMessage, *Report, error) {
	if len(raw) > MaxDocument {
		return nil, nil, errors.New("remote config: report larger than 64 KiB")
	}
	m, err := wire.DecodeEnvelope(raw, false)
	if err != nil {
		return nil, nil, fmt.Errorf("remote config: report: %w", err)
	}
	if m.MessageType != MsgConfigReported {
		return nil, nil, fmt.Errorf("remote config: report: message_type %q", m.MessageType)
	}
	if err := wire.Verify(m, key); err != nil {
		return nil, nil, fmt.Errorf("remote config: report signature: %w", err)
	}
	var r Report
	if err := m.Payload.Decode(&r); err != nil {
		return nil, nil, fmt.Errorf("remote config: report payload: %w", err)
	}
	if r.Result != ResultApplied && r.Result != ResultRefused {
		return nil, nil, fmt.Errorf("remote config: report result %q", r.Result)
	}
	return m, &r, nil
}
