// Package httpapi serves an agent over HTTP with fasthttp: the REST routes of
// SPEC §5 and §11, server-sent event streams, bearer-token auth with scopes,
// and the limits a device exposed to a network needs. It mounts the A2A
// binding (package a2a/a2ahttp) on /a2a and the agent card, lending it the
// token check, the body limits and the stream take-over of every route.
//
// # Routes
//
// A route decodes its request, calls one method of the agent or of the
// packages beside it (tier1, hil, group) and encodes the answer; what
// every API shares lives there, once: idempotency keys
// (agent.Submit with SubmitOptions.Idempotency, Idempotent: the key is the
// Idempotency-Key header or the body's idempotency_key, a replay carries
// Idempotent-Replayed: true), task pages (agent.TaskPage), tier-1 frame
// queries with their opaque page tokens (tier1.Ingestor.Frames). Only the
// admin routes that are about the database file (backup, check) use the
// store directly. Every route is under [wire.APIPrefix].
//
// # Handler types
//
// The Server keeps the listener, the route table (router.go), the token
// check, the body limits and the task, tier-1, capability and registry
// routes. The other routes are served by small types, each holding only
// what its routes use (the agent, the peer network, a manager, the
// streamer) and registered by the route table:
//
//   - groupAPI (group.go, group_ws.go): the group routes, behind one
//     prologue (with: groups running, path arguments unescaped;
//     withGroupBody also decodes the body)
//   - peerAPI (p2p.go, p2p_ws.go, pairing.go, send_message.go): envelopes,
//     peers, pair requests, the outbox, the message streams, SendMessage
//   - contractAPI (negotiate.go): negotiation and contracts
//   - hilAPI (hil.go): human-in-the-loop requests and their stream
//   - auditAPI (audit.go): the audit log
//   - adminAPI (admin.go): health, identity, tokens, the database file,
//     the configuration reload
//
// Handlers return errors; writeError, called once by the Server, writes
// them. The streamer (stream.go, websocket.go) runs the connections SSE
// and WebSocket routes take over, so that Shutdown can end and wait for
// them.
//
// # Requests and answers
//
// Bodies are JSON unless the request says Content-Type: application/msgpack;
// answers are JSON unless the request says Accept: application/msgpack. Both
// use the same field names. Every error answer is the TPError object of
// package wire, written by one adapter (writeError) from the error a route
// returns.
//
// # Streams
//
// SSE routes take the connection over (fasthttp Hijack) so that a stream can
// outlive the server's write timeout; each stream ends on a final event, when
// the client goes away, or when the server shuts down. A stream that can
// resume reads where from the Last-Event-ID header (or the last_event_id
// query parameter) with one helper, sse.Resume (package internal/sse, which
// also holds the stream writer and the follow loop with keep-alives).
//
// # Console
//
// The web console at / (console.go, console/) is static HTML, CSS and
// JavaScript embedded gzipped; it calls only the public routes, with the
// token a person signs in with. Routes added for it are documented in the
// README: the live frames stream (tier1_live.go), GET /tasks/summary
// (summary.go) and the retention figures in GET /tier1/routines.
//
// # Limits
//
// Body size (max_body_bytes; multipart: max_file_size plus 1 MiB), header
// size, read/write/idle timeouts, connections in all and per IP, msgpack
// lengths and nesting (checked before decoding), and a recover per request
// so that a panic answers 500 and the agent keeps serving.
package httpapi
