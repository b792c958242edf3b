// Package outbox is the durable outbox of a Synapse agent (SPEC §6): the
// messages for peers, the callbacks to plain webhooks and the A2A push
// notifications, written in the store transaction of the change that
// announces them and delivered from there, in order per destination,
// with retries and dead letters. It knows neither the agent, nor the
// peers, nor their contracts: it imports store, transport and wire.
//
// # Records
//
// records.go keeps the queue in the store through its typed-bucket
// helper (store.Records), byte for byte as store.Tx wrote it before the
// records moved here:
//
//	outbox       dest 0x00 seq(uint64 BE) → Item JSON (pending)
//	outbox_dead  dest 0x00 seq(uint64 BE) → Item JSON (dead letters)
//	outbox_id    id → state('p' or 'd') dest 0x00 seq(uint64 BE)
//
// A destination is PeerDest(agent id) or URLDest(callback URL). Put
// queues, Batch reads a destination's head, Delivered, RetryLater and
// Kill record an attempt, Revive and ReviveDest requeue dead letters at
// their place, List, Get, Drop and Count serve the administration.
// testdata/written-before-the-move.db is a file written by the code
// before the move: the tests read and drain it, and write the same bytes.
//
// The lanes, rounds, delivery slots and retries over these records are
// package peer's (p2p_outbox.go) for now.
package outbox
