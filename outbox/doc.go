// Package outbox is the durable outbox of a Synapse agent (SPEC §6): the
// messages for peers, the callbacks to plain webhooks and the A2A push
// notifications, written in the store transaction of the change that
// announces them and delivered from there, in order per destination,
// with retries and dead letters. It knows neither the agent, nor the
// peers, nor their contracts: it imports store, transport and wire, and
// reaches the peer protocol through the Peers interface.
//
// # Lifecycle
//
//	q := outbox.New(ctx, outbox.Options{DB: db, Transport: t, Clock: c, Go: spawn, Peers: p, ...})
//	id, err := q.Enqueue(tx, outbox.Message{...}) // inside the change's transaction
//	q.Start()          // delivers what is queued, and what is queued from now on
//	q.Drain(ctx)       // waits for the rounds under way
//	q.Close()          // stops the timers; deliveries under way end with ctx
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
// # Lanes and rounds
//
// The Queue (queue.go) delivers, per destination (a peer or a webhook
// URL), the oldest message first and nothing behind it until it is
// delivered or given up (head of line): a peer sees the messages of a
// task in the order they were sent.
//
// A destination with messages has a lane. A lane runs on a goroutine only
// while it delivers; while its head waits for its next attempt it is a
// timer. A lane sends in rounds: a round takes one of the delivery slots
// (maxDelivering for peers, as many again for webhooks), sends, and gives
// the slot back when it ends or once it has taken slowAfter, whichever
// comes first — a destination that accepts connections and never answers
// holds a slot for slowAfter, not for DeliveryTimeout, so it cannot starve
// the others (its lane goes on waiting for its answer on its own
// goroutine; one lane per destination bounds them).
//
// A round to a webhook sends one message (deliver.go): a plain webhook
// as a transport.Callback, with the HMAC signature header when
// Options.Secret is set, or a message of a type Options.Deliver holds
// (the A2A push notifications) through that delivery. A round to a peer
// reads Peers.ReadAhead items and sends the due ones its Peers.Window
// allows, through Peers.Send: package peer sends them one after another,
// or at once to a peer that orders them (with their sequence numbers),
// or as batches, under the peer's contract.
//
// # Retries and dead letters
//
// After failure n (1-based) the next attempt waits a random time up to
// retry_base_delay * 2^(n-1) (full jitter, at most an hour), or the
// Retry-After the destination asked for if that is longer. After
// max_retries retries, or at once on a Failure marked Permanent (410
// Gone, a peer's refusal that it marks not retriable — a 4xx TPError with
// "retriable": false, but for 401, 408 and 429 — or a peer that is no
// longer paired), the message becomes a dead letter with its last error.
// Only the first failure of a round counts: the messages after it waited
// for it, and are sent again in a later round. Dead letters that gave up
// because the peer could not be reached (Failure.Unreachable: a
// transport error, 401, 502, 503, 504) are requeued at their original
// place when the peer is heard from again (Wake: its heartbeat, or ours
// answered); the others wait for a person (Retry, RetryDeadLetters: POST
// /outbox/{id}/retry, POST /outbox/retry).
//
// Delivery is at least once: a message is deleted after its 2xx answer
// (with the store's next commit, store.DB.UpdateLazy), so a crash in
// between sends it again, with the same message_id, which the receiver
// answers as a duplicate.
//
// # Administration
//
// admin.go lists (List: Entry, Query), retries and drops messages for the
// admin routes; its errors are *wire.Error with the code a client sees.
package outbox
