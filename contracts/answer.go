package contracts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/wire"
)

// Answer is the responder's side: it answers a negotiate_request from p
// with a contract in a signed negotiate_response (in msgpack when msgpack
// is set), or refuses it, and takes a revocation. The messages to p that
// waited for a contract may go once it answered with one. A nil envelope without
// error means the message is accepted with nothing to answer: a
// revocation, or a negotiate_response that arrives on its own (responses
// travel in the answer to the request).
func (cm *Manager) Answer(ctx context.Context, p Peer, m *wire.UnifiedSynapseMessage, msgpack bool) (*wire.UnifiedSynapseMessage, error) {
	peerID := p.ID
	if m.MessageType == wire.MsgNegotiateResponse {
		cm.log.Debug("negotiate_response outside a negotiation ignored", "peer", peerID, "correlation_id", m.CorrelationID)
		return nil, nil
	}
	req, err := negotiate.DecodeRequest(m.Payload)
	if err != nil {
		return nil, err
	}
	if req.RevokeContractID != "" {
		return nil, cm.RevokedByPeer(ctx, peerID, req.RevokeContractID)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "contract id: %v", err)
	}
	c, rej := negotiate.Decide(negotiate.Input{Request: req, Requester: peerID, RequesterSystem: p.SystemID,
		RequestTime: m.Timestamp, Now: cm.clock.Now(), ContractID: id.String()}, cm.a.Responder())
	if rej == nil && c.CommunicationTier == negotiate.Tier2 && len(req.InputSchema) > 0 {
		rej = cm.mapSession(ctx, req, c)
	}
	if rej != nil {
		cm.log.Info("negotiation refused", "peer", peerID, "code", rej.Code, "reason", rej.Reason)
		e := rej.Err()
		e.CorrelationID = m.MessageID
		return nil, e
	}
	pl, err := wire.NewJSONPayload(c)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "encode contract: %v", err)
	}
	if _, err := cm.save(ctx, peerID, RoleResponder, c, pl.Bytes()); err != nil {
		return nil, err
	}
	if msgpack {
		if pl, err = pl.Convert(wire.PayloadMsgpack); err != nil {
			return nil, wire.Errorf(wire.CodeInternal, "encode contract: %v", err)
		}
	}
	env, err := cm.envelope(wire.MsgNegotiateResponse, peerID, "", m.MessageID, pl)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "sign negotiate_response: %v", err)
	}
	return env, nil
}

// mapSession asks the LLM backend for the tier-2 session mapping of req
// and validates it against both sides' schemas before c is made. A mapping
// that cannot be made or is wrong makes the contract tier 3 when the
// requester listed it, else refuses the negotiation (TP-NEG006,
// session_mapping_invalid, offering tier 3).
func (cm *Manager) mapSession(ctx context.Context, req *negotiate.Request, c *negotiate.Contract) *negotiate.Rejection {
	locals := cm.localTypes()
	m, err := cm.askMapping(ctx, req, locals)
	if err == nil {
		err = negotiate.ValidateMapping(m, req.InputSchema, req.OutputSchema, locals)
	}
	if err == nil {
		c.SessionMapping = m
		return nil
	}
	cm.log.Warn("tier-2 session mapping refused", "err", err)
	note := "tier_2_ai_generated not served: " + err.Error()
	if slices.Contains(req.CandidateTiers, negotiate.Tier3) {
		c.CommunicationTier = negotiate.Tier3
		step := &c.NegotiationTrace[len(c.NegotiationTrace)-1]
		step.SelectedTier = negotiate.Tier3
		if step.Note != "" {
			note = step.Note + "; " + note
		}
		step.Note = note
		return nil
	}
	return &negotiate.Rejection{Code: wire.CodeNegNoLLM, Rejected: true, Reason: negotiate.ReasonBadMapping,
		Message:             fmt.Sprintf("no valid tier-2 session could be made: %v", err),
		AlternativeProposal: &negotiate.Proposal{CandidateTransports: []negotiate.Transport{c.TransportMethod}, CandidateTiers: []negotiate.Tier{negotiate.Tier3}}}
}

func (cm *Manager) askMapping(ctx context.Context, req *negotiate.Request, locals []negotiate.LocalType) (*negotiate.Mapping, error) {
	llm := cm.cfg.LLM.Client(cm.a.Transport())
	if llm == nil {
		return nil, errors.New("no LLM backend")
	}
	ctx, cancel := context.WithTimeout(ctx, cm.cfg.LLM.Timeout())
	defer cancel()
	answer, err := llm.Chat(ctx, negotiate.MappingPrompt(req, locals))
	if err != nil {
		return nil, err
	}
	return negotiate.ParseMapping(answer, req.SessionType())
}

// localTypes are the registered task types with their schemas.
func (cm *Manager) localTypes() []negotiate.LocalType {
	types := cm.a.TaskTypes()
	out := make([]negotiate.LocalType, 0, len(types))
	for _, t := range types {
		lt := negotiate.LocalType{TaskType: t.Type, Description: t.Description}
		if t.InputSchema != "" && json.Valid([]byte(t.InputSchema)) {
			lt.InputSchema = json.RawMessage(t.InputSchema)
		}
		if t.OutputSchema != "" && json.Valid([]byte(t.OutputSchema)) {
			lt.OutputSchema = json.RawMessage(t.OutputSchema)
		}
		out = append(out, lt)
	}
	return out
}
