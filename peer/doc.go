// Package peer is a Synapse agent's peer network (seed 004, SPEC §6), on
// top of its task engine (package agent): pairing and key pinning, the
// inbound envelope pipeline, delegated tasks on the wire, the peer side
// of the durable outbox's delivery (package outbox's Queue runs it),
// heartbeats, and the A2A push notifications. The registry this agent
// may be and the registration with another one are package registry's
// (its Directory and Registrar), which the network builds with the keys
// it pinned; the contracts between peers are package contracts', which
// the network constructs and consults on every envelope.
//
// # Lifecycle
//
//	a, err := agent.New(cfg, agent.Options{Logger: log})
//	n, err := peer.New(a, peer.Options{Logger: log}) // attaches n to a
//	err = a.Open(ctx)   // opens n: peers loaded before tasks are recovered, deliveries started after
//	defer a.Close(ctx)  // closes n once the engine stopped, before the store
//
// The network takes its settings from the agent's configuration (its p2p,
// registry and negotiation sections) and uses the agent's store, clock,
// key (through Sign) and metrics. httpapi, grpcapi and group take the
// *Network beside the *agent.Agent and reach its parts through it:
// Network.Pairing (the peer book), Network.Inbound (the inbound
// pipeline), Network.Outbox (the outbox's administration),
// Network.Directory (the registry) and Network.Contracts.
//
// # How it meets the engine
//
// The engine calls the network through agent.Network: every change of a
// task reaches Changed inside the store transaction of the change, where
// the network queues what it announces (remote.go: the p2p:* messages of
// delegated tasks, the webhook callback of a final task), and Push renders
// the A2A push notifications of a task with push configs (a2a_push.go);
// what the engine sends explicitly (a cancel, information or a decision
// for the executing peer) reaches Enqueue in the same transaction.
// Everything is delivered from the outbox. Envelopes from peers are
// checked by the Inbound (Inbound.Deliver, receiver.go: paired sender,
// signature with the pinned key, timestamp, message id not seen, the
// contract) and their task messages handed to the engine's methods on
// behalf of a peer (AcceptFromPeer, ReportFromPeer, ...). Group envelopes
// go to the handler group registers (Inbound.HandleGroupMessages). The
// engine's questions about peers (Known, Refusal) and its retention
// (Prune) reach the Network, which asks the Pairing and the Inbound.
//
// # Parts
//
// Each part is a type of its own that owns its state; the Network holds
// them, runs their goroutines and sends for them.
//
//   - p2p.go: the Network, its lifecycle, envelopes, sending and the feed
//     of received envelopes;
//   - peers.go, pairing.go, peer_caps.go, compliance.go, tlspin.go: the
//     Pairing, the peer book: paired peers and their TLS pins, pair
//     requests, heartbeats, what a peer declares;
//   - p2p_inbound.go, receiver.go, p2p_order.go, p2p_batch.go,
//     p2p_hmac.go, p2p_group.go: the Inbound, the inbound pipeline:
//     every door's Deliver, ordered delivery, batches of envelopes,
//     transport signatures, group routing (the sending halves of batches,
//     signatures and group messages are the deliverer's and the
//     Network's);
//   - remote.go: the messages a change of a delegated task announces;
//   - p2p_outbox.go, p2p_outbox_admin.go, a2a_push.go, disclose.go: the
//     outbox's peer side, the deliverer (outbox.Peers: what a round to a
//     peer is — still paired, its window, batches, each message under the
//     peer's contract, what its answers tell of it; the lanes, rounds,
//     retries, dead letters and the webhooks are package outbox's Queue,
//     built here with the agent's store, transport and clock), the
//     administration (the OutboxAdmin, over the queue's), A2A push
//     notifications (rendered here, delivered by the queue through the
//     delivery per type the network gives it), selective disclosure of
//     results;
//   - registry.go, registrar.go: package registry's Directory, built
//     with the keys pinned here, and its Registrar, given this agent's
//     declaration, key and transport;
//   - contracts.go: the contractor, which runs the negotiations
//     (Network.Negotiate, and the automatic ones) over the network's own
//     send and sends every outbox message under the active contract with
//     its peer, negotiated first when there is none; the contract manager
//     (Network.Contracts) is a filter it calls once each way, Seal before
//     sending and Admit on receipt;
//   - seed_p2p.go: the Go interfaces of seed 004 §5.
//
// Peers authenticate by signature, not by bearer token: an envelope is
// accepted only when it verifies with the key pinned for its sender.
package peer
