package contracts

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/wire"
	"github.com/synapse-edge/synapse/wire/encrypt"
)

// Exempt reports whether a message type needs no contract and is never
// encrypted.
func Exempt(msgType wire.MessageType) bool {
	switch msgType {
	case wire.MsgNegotiateRequest, wire.MsgNegotiateResponse, wire.MsgHeartbeat,
		wire.MsgCapabilityQuery, wire.MsgCapabilityResponse, wire.MsgError:
		return true
	}
	return false
}

// Errors of Seal.
var (
	// ErrNoContract: the message needs a contract and there is no active
	// one with the peer. The network negotiates one (see the package doc)
	// and seals the message under it with SealUnder.
	ErrNoContract = errors.New("no active contract")
	// ErrUnread: the contracts could not be read; another try may.
	ErrUnread = errors.New("contracts unread")
)

// Seal is the filter every outgoing envelope passes: it puts m, built
// for p and not yet signed, under the active contract with p, named in
// protocol_contract_ref, and seals the payload as the contract's level
// asks: under high the whole payload for p (content_type
// ContentEncrypted), under standard the private fields of a
// p2p:task_request's task.payload one by one. It returns the contract,
// nil for a type that needs none (Exempt), or ErrNoContract.
func (cm *Manager) Seal(p Peer, m *wire.UnifiedSynapseMessage) (*negotiate.Contract, error) {
	if Exempt(m.MessageType) {
		return nil, nil
	}
	c, _, err := cm.active(p.ID, cm.clock.Now())
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrUnread, err)
	case c == nil:
		return nil, ErrNoContract
	}
	return c, cm.SealUnder(c, p, m)
}

// SealUnder is Seal under c (nil: none): the contract the network
// negotiated when Seal found none, or the one a batch goes under.
func (cm *Manager) SealUnder(c *negotiate.Contract, p Peer, m *wire.UnifiedSynapseMessage) error {
	if c == nil || Exempt(m.MessageType) {
		return nil
	}
	m.ProtocolContractRef = c.ContractID
	return cm.seal(m, p, c)
}

// envelope builds and signs a message for peer without a contract.
func (cm *Manager) envelope(msgType wire.MessageType, peerID, id, corr string, pl wire.RawPayload) (*wire.UnifiedSynapseMessage, error) {
	msg := cm.newMessage(msgType, peerID, id, corr, pl)
	if err := cm.a.Sign(msg); err != nil {
		return nil, err
	}
	return msg, nil
}

func (cm *Manager) newMessage(msgType wire.MessageType, peerID, id, corr string, pl wire.RawPayload) *wire.UnifiedSynapseMessage {
	self := cm.a.Identity()
	msg := wire.NewMessage(msgType, wire.AgentRef{AgentID: self.AgentID, SystemID: self.SystemID, Endpoint: self.Endpoint},
		wire.AgentRef{AgentID: peerID}, pl, cm.clock.Now())
	if id != "" {
		msg.MessageID = id
	}
	msg.CorrelationID = corr
	return msg
}

// seal encrypts what c's security level asks for.
func (cm *Manager) seal(m *wire.UnifiedSynapseMessage, p Peer, c *negotiate.Contract) error {
	if c.SecurityLevel != negotiate.High && (c.SecurityLevel != negotiate.Standard || m.MessageType != wire.MsgTaskRequest || len(c.PrivateFields) == 0) {
		return nil
	}
	pub, err := encrypt.X25519PublicKey(p.Key)
	if err != nil {
		return fmt.Errorf("encryption key of %s: %w", p.ID, err)
	}
	if c.SecurityLevel == negotiate.High {
		plain, err := m.Payload.Convert(wire.PayloadJSON)
		if err != nil {
			return err
		}
		ep, err := encrypt.SealPayload(pub, plain.Bytes(), wire.ContentJSON, encrypt.EncryptionAAD(m, ""))
		if err != nil {
			return err
		}
		if m.Payload, err = wire.NewJSONPayload(ep); err != nil {
			return err
		}
		m.ContentType = encrypt.ContentEncrypted
		return nil
	}
	return rewriteTaskPayload(m, func(taskType string, payload map[string]json.RawMessage) error {
		var sealed []string
		for _, f := range c.PrivateFields[taskType] {
			v, ok := payload[f]
			if !ok {
				continue
			}
			ep, err := encrypt.SealPayload(pub, v, wire.ContentJSON, encrypt.EncryptionAAD(m, f))
			if err != nil {
				return err
			}
			if payload[f], err = json.Marshal(ep); err != nil {
				return err
			}
			sealed = append(sealed, f)
		}
		if len(sealed) > 0 {
			m.ContentType = encrypt.PrivateContentType(sealed)
		}
		return nil
	})
}

// rewriteTaskPayload lets edit change a p2p:task_request's task.type and
// the top-level fields of its task.payload, and re-encodes the payload as
// JSON. Everything else is kept.
func rewriteTaskPayload(m *wire.UnifiedSynapseMessage, edit func(taskType string, payload map[string]json.RawMessage) error) error {
	raw, err := m.Payload.Convert(wire.PayloadJSON)
	if err != nil {
		return err
	}
	var env map[string]json.RawMessage
	var task map[string]json.RawMessage
	var payload map[string]json.RawMessage
	var taskType string
	if err := json.Unmarshal(raw.Bytes(), &env); err != nil {
		return fmt.Errorf("task_request payload: %w", err)
	}
	if err := json.Unmarshal(env["task"], &task); err != nil {
		return fmt.Errorf("task_request task: %w", err)
	}
	if err := json.Unmarshal(task["type"], &taskType); err != nil {
		return fmt.Errorf("task_request task.type: %w", err)
	}
	if p := task["payload"]; len(p) > 0 && string(p) != "null" {
		if err := json.Unmarshal(p, &payload); err != nil {
			return fmt.Errorf("task_request task.payload: %w", err)
		}
	}
	if payload == nil {
		payload = map[string]json.RawMessage{}
	}
	if err := edit(taskType, payload); err != nil {
		return err
	}
	if task["payload"], err = json.Marshal(payload); err != nil {
		return err
	}
	if env["task"], err = json.Marshal(task); err != nil {
		return err
	}
	b, err := json.Marshal(env)
	if err != nil {
		return err
	}
	m.Payload, err = wire.RawJSONPayload(b)
	return err
}

// Admit checks m against the contracts with its sender and returns the
// message to act on: m itself, or a copy with its payload decrypted or
// mapped (whose signature no longer verifies; it was checked before).
func (cm *Manager) Admit(p Peer, m *wire.UnifiedSynapseMessage) (*wire.UnifiedSynapseMessage, error) {
	peerID := p.ID
	now := cm.clock.Now()
	var c *negotiate.Contract
	if !Exempt(m.MessageType) {
		var err error
		if c, err = cm.contractFor(p, m, now); err != nil {
			return nil, err
		}
	}
	dm, sealed, err := cm.open(m)
	if err != nil {
		cm.a.Audit(agent.AuditDecryptFailed, peerID, map[string]any{"message_id": m.MessageID, "message_type": string(m.MessageType), "error": err.Error()})
		return nil, err
	}
	if sealed.whole || len(sealed.fields) > 0 {
		cm.a.Audit(agent.AuditDecrypted, peerID, map[string]any{"message_id": m.MessageID, "message_type": string(m.MessageType),
			"whole": sealed.whole, "fields": sealed.fields})
	}
	if c == nil {
		return dm, nil
	}
	switch {
	case c.SecurityLevel == negotiate.High && !sealed.whole:
		return nil, wire.Errorf(wire.CodeNegSecurity, "contract %s is high: the payload of %s must be encrypted", c.ContractID, m.MessageType).
			With("contract_id", c.ContractID)
	case c.SecurityLevel == negotiate.Standard && m.MessageType == wire.MsgTaskRequest && !sealed.whole:
		if err := checkPrivate(dm, c, sealed.fields); err != nil {
			return nil, err
		}
	}
	if c.SessionMapping != nil {
		if err := cm.applySession(peerID, dm, c.SessionMapping); err != nil {
			return nil, err
		}
	}
	return dm, nil
}

// contractFor is the contract a non-exempt message from p is under, or
// nil.
func (cm *Manager) contractFor(p Peer, m *wire.UnifiedSynapseMessage, now time.Time) (*negotiate.Contract, error) {
	peerID := p.ID
	self := cm.a.Identity().SystemID
	cross := p.SystemID != self
	var c *negotiate.Contract
	if ref := m.ProtocolContractRef; ref != "" {
		rec, err := cm.record(ref)
		if err != nil {
			return nil, err
		}
		if rec.Peer != peerID {
			return nil, wire.Errorf(wire.CodeNegContractUnknown, "no contract %q with %s", ref, peerID).With("contract_id", ref)
		}
		switch negotiate.StatusAt(rec.ExpiresAt, rec.Revoked(), now) {
		case negotiate.StatusExpired:
			return nil, wire.Errorf(wire.CodeNegContractExpired, "contract %s expired at %s: negotiate again", ref, wire.FormatTime(rec.ExpiresAt)).
				With("contract_id", ref).With("reason", negotiate.StatusExpired)
		case negotiate.StatusRevoked:
			return nil, wire.Errorf(wire.CodeNegContractExpired, "contract %s was revoked at %s: negotiate again", ref, wire.FormatTime(rec.RevokedAt)).
				With("contract_id", ref).With("reason", negotiate.StatusRevoked)
		}
		if c, err = terms(rec); err != nil {
			return nil, err
		}
	} else {
		var negotiated bool
		var err error
		if c, negotiated, err = cm.active(peerID, now); err != nil {
			return nil, err
		}
		if c == nil && (cross || negotiated || cm.cfg.ContractRequired()) {
			return nil, wire.Errorf(wire.CodeNegContractMissing,
				"%s has no protocol_contract_ref and there is no active contract with %s: negotiate first", m.MessageType, peerID).
				With("peer", peerID)
		}
	}
	if c != nil && cross && c.SecurityLevel != negotiate.High {
		return nil, wire.Errorf(wire.CodeNegSecurity, "%s is in system %q, not %q: its contract %s must be high, not %s",
			peerID, p.SystemID, self, c.ContractID, c.SecurityLevel).
			With("contract_id", c.ContractID).With("security_level", string(c.SecurityLevel))
	}
	return c, nil
}

// sealing tells what of a received payload was encrypted.
type sealing struct {
	whole  bool
	fields []string
}

// open decrypts an encrypted payload (whole, or the private fields of a
// task_request). Every failure is TP-SEC003.
func (cm *Manager) open(m *wire.UnifiedSynapseMessage) (*wire.UnifiedSynapseMessage, sealing, error) {
	fields := encrypt.PrivateFields(m.ContentType)
	whole := encrypt.IsEncrypted(m.ContentType)
	if !whole && fields == nil {
		return m, sealing{}, nil
	}
	secErr := func(err error) error {
		return wire.Errorf(wire.CodeSecDecrypt, "%s: %v", m.MessageType, err).With("message_id", m.MessageID)
	}
	priv, err := cm.a.X25519Key()
	if err != nil {
		return nil, sealing{}, secErr(err)
	}
	dm := *m
	if whole {
		ep, err := encrypt.DecodeEncryptedPayload(m.Payload)
		if err != nil {
			return nil, sealing{}, secErr(err)
		}
		pt, cty, err := ep.Open(priv, encrypt.EncryptionAAD(m, ""))
		if err != nil {
			return nil, sealing{}, secErr(err)
		}
		switch mt := strings.TrimSpace(strings.SplitN(cty, ";", 2)[0]); mt {
		case wire.ContentJSON:
			dm.Payload, err = wire.RawJSONPayload(pt)
		case wire.ContentMsgpack:
			dm.Payload, err = wire.RawMsgpackPayload(pt)
		default:
			err = fmt.Errorf("plaintext type %q is not JSON or msgpack", cty)
		}
		if err != nil {
			return nil, sealing{}, secErr(err)
		}
		dm.ContentType = ""
		cm.log.Debug("payload decrypted", "type", m.MessageType, "message_id", m.MessageID)
		return &dm, sealing{whole: true}, nil
	}
	if m.MessageType != wire.MsgTaskRequest {
		return nil, sealing{}, secErr(errors.New("private fields are only encrypted in p2p:task_request"))
	}
	err = rewriteTaskPayload(&dm, func(_ string, payload map[string]json.RawMessage) error {
		for _, f := range fields {
			var ep encrypt.EncryptedPayload
			if err := json.Unmarshal(payload[f], &ep); err != nil {
				return fmt.Errorf("field %q is not an encrypted payload", f)
			}
			pt, _, err := ep.Open(priv, encrypt.EncryptionAAD(m, f))
			if err != nil {
				return fmt.Errorf("field %q: %w", f, err)
			}
			if !json.Valid(pt) {
				return fmt.Errorf("field %q is not JSON once decrypted", f)
			}
			payload[f] = pt
		}
		return nil
	})
	if err != nil {
		return nil, sealing{}, secErr(err)
	}
	dm.ContentType = ""
	return &dm, sealing{fields: fields}, nil
}

// checkPrivate refuses a task_request under a standard contract whose
// private fields (those present) were sent in clear.
func checkPrivate(m *wire.UnifiedSynapseMessage, c *negotiate.Contract, sealed []string) error {
	var req wire.TaskRequestPayload
	if err := m.Payload.Decode(&req); err != nil {
		return badPayload(m.MessageType, err)
	}
	var payload map[string]json.RawMessage
	_ = json.Unmarshal(req.Task.Payload, &payload)
	for _, f := range c.PrivateFields[req.Task.Type] {
		if _, present := payload[f]; present && !slices.Contains(sealed, f) {
			return wire.Errorf(wire.CodeNegSecurity, "contract %s is standard: field %q of %s must be encrypted", c.ContractID, f, req.Task.Type).
				With("contract_id", c.ContractID).With("field", f)
		}
	}
	return nil
}

// applySession renames a tier-2 session's messages (see above).
func (cm *Manager) applySession(peerID string, m *wire.UnifiedSynapseMessage, sm *negotiate.Mapping) error {
	switch m.MessageType {
	case wire.MsgTaskRequest:
		return rewriteTaskPayloadWhole(m, sm)
	case wire.MsgTaskComplete:
		var done wire.TaskCompletePayload
		if err := m.Payload.Decode(&done); err != nil {
			return badPayload(m.MessageType, err)
		}
		t, err := cm.a.Task(done.TaskID)
		if err != nil || t.Target != peerID || t.Type != sm.SessionTaskType || !done.Result.Output.IsObject() {
			return nil // not a session task of ours: as is
		}
		out, err := sm.MapOutput(done.Result.Output)
		if err != nil {
			return wire.Errorf(wire.CodeValSchema, "tier-2 session output: %v", err)
		}
		done.Result.Output = out
		m.Payload, err = wire.NewJSONPayload(&done)
		return err
	}
	return nil
}

// rewriteTaskPayloadWhole turns a task_request of the session's type into
// the mapped local task type and payload.
func rewriteTaskPayloadWhole(m *wire.UnifiedSynapseMessage, sm *negotiate.Mapping) error {
	var req wire.TaskRequestPayload
	if err := m.Payload.Decode(&req); err != nil {
		return badPayload(m.MessageType, err)
	}
	if req.Task.Type != sm.SessionTaskType {
		return nil
	}
	in, err := sm.MapInput(req.Task.Payload)
	if err != nil {
		return wire.Errorf(wire.CodeValSchema, "tier-2 session input: %v", err)
	}
	req.Task.Type, req.Task.Payload = sm.TaskType, in
	m.Payload, err = wire.NewJSONPayload(&req)
	return err
}

func badPayload(msgType wire.MessageType, err error) error {
	return wire.Errorf(wire.CodeMessageFormatInvalid, "%s payload: %v", msgType, err)
}
