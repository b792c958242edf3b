package peer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/contracts"
	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Selective disclosure and personal data (seed 002 §8.3.2: security level
// high adds selective disclosure and mandatory audit, and is required for
// personal data).
//
// A task type may declare, per requesting peer, which top-level fields of
// its result that peer may see (handlers[].disclose). When the result is
// queued for the requesting peer, every other field is removed: it never
// leaves this agent, so it is neither on the wire nor in the requester's
// store. The rules apply whatever the contract's level — a rule never
// loosens below high. Each result sent for such a task type, and each
// result sent under a high contract, is recorded in the audit chain in the
// same transaction that queues the message: the peer, the task, the fields
// sent and the fields withheld.
//
// A task type marked personal_data takes its payloads as personal data: a
// peer's request for it is rejected with TP-NEG004 unless the active
// contract with that peer is high.

// AuditDisclosed is the audit kind of a result sent to a requesting peer.
const AuditDisclosed = "result_disclosed"

// allowed returns the fields rules let peer see; ok is false when no rule
// names peer or "*" (the peer sees no field).
func allowedFields(rules []agent.DisclosureRule, peer string) (fields map[string]bool, ok bool) {
	var star *agent.DisclosureRule
	for i := range rules {
		switch rules[i].Peer {
		case peer:
			return fieldSet(rules[i].Fields), true
		case "*":
			if star == nil {
				star = &rules[i]
			}
		}
	}
	if star != nil {
		return fieldSet(star.Fields), true
	}
	return nil, false
}

func fieldSet(fs []string) map[string]bool {
	m := make(map[string]bool, len(fs))
	for _, f := range fs {
		m[f] = true
	}
	return m
}

// discloseResult returns out filtered for peer by rules, with the names of
// the fields sent and withheld. A result that is not a JSON object is
// withheld whole (as the field "*") unless a rule allows "*".
func discloseResult(rules []agent.DisclosureRule, peer string, out wire.JSONValue) (wire.JSONValue, []string, []string, error) {
	allow, _ := allowedFields(rules, peer)
	if len(out) == 0 || string(out) == "null" {
		return out, []string{}, []string{}, nil
	}
	if !out.IsObject() {
		if allow["*"] {
			return out, []string{"*"}, []string{}, nil
		}
		return wire.JSONValue("null"), []string{}, []string{"*"}, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(out, &obj); err != nil {
		return nil, nil, nil, fmt.Errorf("result: %w", err)
	}
	sent, withheld := []string{}, []string{}
	kept := make(map[string]json.RawMessage, len(obj))
	for k, v := range obj {
		if allow[k] || allow["*"] {
			kept[k] = v
			sent = append(sent, k)
		} else {
			withheld = append(withheld, k)
		}
	}
	sort.Strings(sent)
	sort.Strings(withheld)
	if len(withheld) == 0 {
		return out, sent, withheld, nil
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("result: %w", err)
	}
	return wire.JSONValue(b), sent, withheld, nil
}

// disclose is called for each message queued inside tx: a task's result
// for the peer that asked for it is filtered by its task type's rules and
// the disclosure audited. Other messages are returned unchanged.
func (n *Network) disclose(tx *store.Tx, m agent.Outgoing) (agent.Outgoing, error) {
	p, ok := m.Payload.(*wire.TaskCompletePayload)
	if m.Type != wire.MsgTaskComplete || !ok || m.Peer == "" {
		return m, nil
	}
	var rules []agent.DisclosureRule
	if h, ok := n.a.HandlerOf(m.TaskType); ok {
		rules = h.Disclose
	}
	c := contracts.ActiveIn(tx, m.Peer, n.clock.Now())
	high := c != nil && c.SecurityLevel.AtLeast(negotiate.High)
	if len(rules) == 0 && !high {
		return m, nil
	}
	out, sent, withheld := p.Result.Output, []string{}, []string{}
	if len(rules) > 0 {
		var err error
		if out, sent, withheld, err = discloseResult(rules, m.Peer, p.Result.Output); err != nil {
			// A result that cannot be read is withheld whole rather than
			// failing the transaction that stores the task's outcome.
			out, sent, withheld = wire.JSONValue("null"), []string{}, []string{"*"}
		}
	} else if p.Result.Output.IsObject() {
		_, sent, _, _ = discloseResult([]agent.DisclosureRule{{Peer: "*", Fields: []string{"*"}}}, m.Peer, p.Result.Output)
	}
	detail := map[string]any{"task_id": p.TaskID, "task_type": m.TaskType, "fields_sent": sent, "fields_withheld": withheld,
		"result_sha256": sha256Hex(out)}
	if c != nil {
		detail["contract_id"], detail["security_level"] = c.ContractID, string(c.SecurityLevel)
	}
	if err := n.a.AuditIn(tx, AuditDisclosed, m.Peer, detail); err != nil {
		return m, err
	}
	if len(withheld) > 0 {
		cp := *p
		cp.Result.Output = out
		cp.Result.Metadata = map[string]any{"disclosure": "selective", "fields_withheld": len(withheld)}
		m.Payload = &cp
	}
	return m, nil
}

// PersonalDataRefusal is the error a peer's request for a task type marked
// personal_data gets when the contract with the peer is not high; nil when
// it may run (the engine asks it only for such task types).
func (n *Network) PersonalDataRefusal(peer, taskType string) *wire.Error {
	return n.contracts.PersonalDataRefusal(peer, taskType)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
