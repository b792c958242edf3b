// Package transport is the seam every outbound byte of the agent goes
// through: envelopes for peers, callbacks to webhooks, tier-1 batches for an
// upstream agent, and requests to services (an LLM backend, a registry, a
// peer's identity document).
//
// The sending side owns the interface, as litestream's DB owns
// ReplicaClient and tailscale's engine owns control/controlclient: the
// outbox, the tier-1 uplink and the negotiator know a Transport and a
// destination URL, never HTTP, MQTT or JSON-RPC. Each wire is a small
// package implementing Transport (transport/httptransport for http and
// https); a Mux picks one by the scheme of the destination.
//
// # Sending
//
// A Message says what is sent (its Kind), to where (To, a URL), the bytes
// (Body, ContentType) and a few named headers (Header: message id, outbox
// sequence, HMAC signature, bearer token). Transport.Send delivers it and
// returns an Outcome, classified once, by the transport, into one of four
// classes:
//
//   - Delivered: the destination took the message; Reply holds its answer
//     (a synchronous answer envelope, a document, a completion).
//   - Retry: try the same bytes again, not before RetryAfter (0: the
//     sender's own back-off). Unreached tells that the destination was not
//     reached or has not accepted this agent yet (worth requeueing when it
//     is heard from again).
//   - Negotiable: the destination refused these bytes under the current
//     terms (a contract it does not hold, a capability or version it lacks,
//     TP §10.4 class Negotiable): change them, then send again.
//   - Permanent: the same bytes will never be accepted; do not retry.
//
// Callers act on the class, not on status codes or bodies. The class of a
// destination's TPError (SPEC §4) comes from the error registry of package
// wire; Classify holds the remaining rules (statuses without a TPError,
// plain webhooks, tier-1 batches) in one place, for every transport.
//
// # Receiving
//
// HTTP requests reach the agent through its API server. A transport that
// also receives (MQTT: a peer publishes to this agent's inbox topic) hands
// each message to a Receiver, the peer network's entry point, and sends the
// Answer back the way its wire does (MQTT: an acknowledgement to the
// sender's reply topic). The sending side turns that answer into an
// Outcome with Classify, exactly as the HTTP transport does with a
// response, so a message has the same outcome whichever wire carried it.
//
// # Destinations
//
// To is a URL. For an Envelope or a Batch it is the destination agent's
// endpoint (its base URL: the transport knows the path or topic of the
// message endpoint); for a Callback, a Request or a Fetch it is the URL
// to call. A Mux maps the scheme (http, https, mqtt, mqtts, ...) to a
// Transport; an unknown scheme is a Permanent outcome naming it.
package transport
