// Package contracts is an agent's side of protocol negotiation (seed 002
// chapter 08, SPEC §7): the contracts it makes with its peers, kept in the
// store, and enforced on every envelope. The decisions themselves (which
// tier, transport and security level; the checks of a contract; the
// tier-2 session mapping) are package negotiate's; this package applies
// them between two agents and remembers the outcome. It sits between the
// task engine (package agent, whose exported methods it uses) and the
// peer network (package peer), which constructs a Manager with New over
// its outbox and calls it as a filter, once each way: Seal before an
// envelope is signed and sent, Admit when one is received. The manager
// sends nothing and calls nothing of the network: the negotiations it
// needs are run by the network with the steps of a Negotiation.
//
// # Making a contract
//
// A requester (Manager.Begin) sends negotiate_request to a paired peer
// (Negotiation.Next, over the network) and gets the contract back in the
// synchronous answer, a signed negotiate_response (Negotiation.Answered),
// which it checks and stores (Negotiation.Conclude); each attempt is
// bounded by negotiation.timeout_ms and failed attempts are retried up to
// negotiation.retries times before TP-NEG020 (negotiate.Exchange, which
// the network runs). The responder (Manager.Answer) decides
// with negotiate.Decide. Both keep the contract in the store, frozen, with
// their role (RoleRequester, RoleResponder).
//
// A contract ends when it expires or when either side revokes it
// (Manager.Revoke); the revocation is sent to the other side as a
// negotiate_request with revoke_contract_id, through the durable outbox,
// queued in the transaction that revokes it.
//
// # Automatic negotiation
//
// A peer refuses a message without an active contract (TP-NEG010), so the
// network never sends one without: before a message that needs a contract
// (every type but those Exempt) goes to a peer with no active contract
// here (Manager.Seal answers ErrNoContract), the network negotiates one
// with the configured defaults (the tiers this agent serves, its minimum
// security level, raised to high across systems by both sides). One negotiation per peer runs at a time;
// messages to that peer wait for it.
//
// Renegotiation is the same step: a contract that expired or was revoked
// is no longer active, so the next message negotiates a new one instead of
// ending as a dead letter with TP-NEG012. When the peer refuses the
// contract named in a message (RefusesContract: TP-NEG010, TP-NEG011 or
// TP-NEG012; it expired there first, or the peer lost or revoked it and
// the revocation has not arrived yet), the network records the contract as
// revoked by the peer (Manager.RevokedByPeer), negotiates again and sends
// the message once more (SealUnder the new contract).
//
// A peer that does not negotiate at all (it answered without a contract)
// gets its messages without one (AutoFailure is nil).
//
// # Every envelope
//
// Outgoing (Manager.Seal, when the outbox builds an envelope at send
// time, before it is signed): the active contract with the peer is named in
// protocol_contract_ref; under high the whole payload is sealed for the
// peer (content_type ContentEncrypted), under standard the private fields
// of a p2p:task_request's task.payload (the contract's private_fields for
// that task type) are sealed one by one (content_type application/json;
// private="..."). See package wire/encrypt for the scheme.
//
// Incoming (Manager.Admit, after the network checked the signature and
// timestamp, before the message takes effect):
//
//   - protocol_contract_ref names a contract with this peer that is
//     active, else TP-NEG011 (unknown, or another peer's; 404) or TP-NEG012
//     (expired or revoked; 410);
//   - no protocol_contract_ref: the peer's active contract applies
//     implicitly (seed §8.3.4 MAY); with none, TP-NEG010 (428: seed
//     §8.3.4 MUST). Only negotiation.require_contract: false lets a peer
//     of the same system that never negotiated send without a contract;
//   - a peer of another system_id needs a high contract (seed §8.3.2:
//     cross-organisation collaboration), else TP-NEG004 (409);
//   - an encrypted payload is opened with this agent's key, else TP-SEC003
//     (400) and nothing takes effect;
//   - the contract's level is met: under high the payload must have been
//     encrypted, under standard a task_request's private fields must have
//     been, else TP-NEG004 (409);
//   - under a tier-2 contract with a session mapping, a task_request of
//     the session's task type becomes the mapped local task, and the
//     result of a task this agent sent as the session type is renamed
//     back.
//
// Negotiation, heartbeats, capability queries and errors are exempt from
// all of it but decryption: they come before or beside any contract.
//
// A task type marked personal_data runs for a peer only under a high
// contract (Manager.PersonalDataRefusal).
package contracts
