// Package negotiate decides how two agents talk (seed 002 chapter 08, SPEC
// §7): the communication tier, the transport and the security level, frozen
// into a ProtocolContract. It holds the payloads of negotiate_request and
// negotiate_response, the decision of the responder, the checks of the
// requester, the retry rule of the client, the tier-2 session mapping, an
// OpenAI-compatible chat-completions client for the LLM backend and the
// agent's negotiation Config. It does no storage and sends no envelopes:
// package contracts does both, between two agents.
//
// # Tiers
//
// tier_1_standardized > tier_2_ai_generated > tier_3_natural_language. The
// responder picks the highest tier in candidate_tiers that it can serve,
// whatever the order of the list (seed 002 §8.2.5: MUST prefer the highest;
// the "first in list" rule of §8.4.2 applies to transports only):
//
//   - tier 1 needs the requester's capability (capability_id, version and
//     descriptor hash) to be one of the responder's tier-1 routines,
//     identical in all three; else TP-NEG005;
//   - tier 2 needs an LLM backend on the responder; else TP-NEG006;
//   - tier 3 is always served.
//
// A tier that cannot be served is skipped for the next lower candidate; the
// listed candidates are the requester's explicit consent to each of them.
// When none can be served the answer is the error of the lowest candidate
// that failed (TP-NEG005 or TP-NEG006; TP-NEG003 when no candidate is a
// known tier) with an alternative_proposal listing the tiers the responder
// does serve below it (seed 002 §8.4.4: tier 1 → tier 2, tier 2 → tier 3).
//
// # Transports
//
// The first entry of candidate_transports (in the requester's order) whose
// protocol the responder supports. An agent serves native_tp and rest_api
// (both are its HTTP API) by default, and a2a_jsonrpc (its A2A JSON-RPC
// binding, SPEC §7) when Config.Transports lists it. None in common →
// TP-NEG003 with an alternative_proposal of the responder's transports
// (the downgrade row "native_tp → a2a_jsonrpc" of §8.4.4, generalised).
//
// # Security levels
//
// basic < standard < high. The contract's level is the highest of the
// requested preferred_security_level, the responder's configured minimum,
// and high when the two agents are in different systems (system_id) or when
// goal_type is consult (seed 002 §8.3.2). It is never lower than requested:
// when the responder cannot reach it (its configured maximum is lower) the
// answer is TP-NEG004 with no alternative, so that only the requester can
// decide to ask again for less (§8.4.4).
//
// # Profiles
//
// A responder's protocol profile (tp_core < tp_secure < tp_full, seed 002
// §8.2.2–8.2.4) follows from what it serves: see Profile. A request may
// name required_profile; a responder that does not meet it refuses with
// reason profile_not_met, its own profile and what it lacks in the
// details, and the code of the first thing it lacks: TP-NEG006 (tier 2),
// TP-NEG004 (a security level), TP-NEG005 (tier 1), TP-NEG003 (the basic
// interfaces). Without preferred_security_level such a request asks for
// the profile's default level (standard from tp_secure up, §8.3.2).
//
// # Contract
//
// contract_id is a UUID v7; contract_expiration is at most 24 h after the
// decision; negotiation_trace has two steps, the requester's proposal
// (transports and tiers, selected null) and the responder's selection, in
// the shape of seed 002 §8.5.2 with the tiers recorded as well. Once made a
// contract never changes; it ends by expiring or by being revoked.
//
// # Errors
//
//	TP-NEG001  candidate_transports is empty                 400
//	TP-NEG002  candidate_tiers is empty                      400
//	TP-NEG003  no common transport (or no known tier)        409 + alternative_proposal
//	TP-NEG004  security level cannot be met                  409
//	TP-NEG005  tier 1 capability differs                     409 + alternative_proposal
//	TP-NEG006  tier 2 without an LLM backend                 409 + alternative_proposal
//	TP-NEG010  a later message without protocol_contract_ref and no active contract
//	TP-NEG011  the referenced contract does not exist
//	TP-NEG012  the referenced contract has expired (or was revoked)
//	TP-NEG020  negotiation timed out after the retries (Exchange)
//
// Rejections carry the seed's object in the error's details:
// {"rejected": true, "reason": "...", "alternative_proposal": {...}}.
package negotiate
