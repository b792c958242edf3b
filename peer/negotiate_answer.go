package peer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// negotiateMessage answers negotiate_request (a contract in a signed
// negotiate_response, or a refusal) and takes a revocation. A
// negotiate_response that arrives on its own (responses travel in the
// answer to the request) is accepted without effect.
func (n *Network) negotiateMessage(ctx context.Context, p *peer, m *wire.UnifiedSynapseMessage, msgpack bool) (*Reply, error) {
	accepted := &Reply{Accepted: &Accepted{Accepted: true, MessageID: m.MessageID}}
	peerID := p.rec.AgentID
	if m.MessageType == wire.MsgNegotiateResponse {
		n.log.Debug("negotiate_response outside a negotiation ignored", "peer", peerID, "correlation_id", m.CorrelationID)
		return accepted, nil
	}
	req, err := negotiate.DecodeRequest(m.Payload)
	if err != nil {
		return nil, err
	}
	if req.RevokeContractID != "" {
		return accepted, n.revokedByPeer(ctx, peerID, req.RevokeContractID)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "contract id: %v", err)
	}
	c, rej := negotiate.Decide(negotiate.Input{Request: req, Requester: peerID, RequesterSystem: p.rec.SystemID,
		RequestTime: m.Timestamp, Now: n.clock.Now(), ContractID: id.String()}, n.a.Responder())
	if rej == nil && c.CommunicationTier == negotiate.Tier2 && len(req.InputSchema) > 0 {
		rej = n.mapSession(ctx, req, c)
	}
	if rej != nil {
		n.log.Info("negotiation refused", "peer", peerID, "code", rej.Code, "reason", rej.Reason)
		e := rej.Err()
		e.CorrelationID = m.MessageID
		return nil, e
	}
	pl, err := wire.NewJSONPayload(c)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "encode contract: %v", err)
	}
	if _, err := n.saveContract(ctx, peerID, RoleResponder, c, pl.Bytes()); err != nil {
		return nil, err
	}
	if msgpack {
		if pl, err = pl.Convert(wire.PayloadMsgpack); err != nil {
			return nil, wire.Errorf(wire.CodeInternal, "encode contract: %v", err)
		}
	}
	env, err := n.envelope(wire.MsgNegotiateResponse, peerID, "", m.MessageID, pl)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "sign negotiate_response: %v", err)
	}
	n.spawn(func() { n.out.wake(peerID) })
	return &Reply{Envelope: env}, nil
}

// revokedByPeer records the peer's revocation of one of its contracts
// with this agent (TP-NEG011 for a contract it does not share).
func (n *Network) revokedByPeer(ctx context.Context, peer, id string) error {
	var rec *store.ContractRecord
	err := n.db.Update(ctx, func(tx *store.Tx) error {
		r, err := tx.Contract(id)
		if err != nil {
			return err
		}
		if r.Peer != peer {
			return store.ErrNotFound
		}
		if rec, err = tx.RevokeContract(id, n.clock.Now(), peer); err != nil {
			return err
		}
		return n.a.AuditIn(tx, agent.AuditContractRevoked, peer, map[string]any{"contract_id": id, "by": peer})
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return wire.Errorf(wire.CodeNegContractUnknown, "no contract %q with %s", id, peer).With("contract_id", id)
	case err != nil:
		return wire.Errorf(wire.CodeSysStorage, "revoke contract: %v", err)
	}
	n.log.Info("contract revoked by the peer", "contract_id", id, "peer", peer, "revoked_by", rec.RevokedBy)
	return nil
}

// mapSession asks the LLM backend for the tier-2 session mapping of req
// and validates it against both sides' schemas before c is made. A mapping
// that cannot be made or is wrong makes the contract tier 3 when the
// requester listed it, else refuses the negotiation (TP-NEG006,
// session_mapping_invalid, offering tier 3).
func (n *Network) mapSession(ctx context.Context, req *negotiate.Request, c *negotiate.Contract) *negotiate.Rejection {
	locals := n.localTypes()
	m, err := n.askMapping(ctx, req, locals)
	if err == nil {
		err = negotiate.ValidateMapping(m, req.InputSchema, req.OutputSchema, locals)
	}
	if err == nil {
		c.SessionMapping = m
		return nil
	}
	n.log.Warn("tier-2 session mapping refused", "err", err)
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

func (n *Network) askMapping(ctx context.Context, req *negotiate.Request, locals []negotiate.LocalType) (*negotiate.Mapping, error) {
	llm := n.a.LLMClient()
	if llm == nil {
		return nil, errors.New("no LLM backend")
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Negotiation.LLM.Timeout())
	defer cancel()
	answer, err := llm.Chat(ctx, negotiate.MappingPrompt(req, locals))
	if err != nil {
		return nil, err
	}
	return negotiate.ParseMapping(answer, req.SessionType())
}

// localTypes are the registered task types with their schemas.
func (n *Network) localTypes() []negotiate.LocalType {
	types := n.a.TaskTypes()
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
