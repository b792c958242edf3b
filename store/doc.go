// Package store keeps everything an agent persists in one bbolt file and
// the commit log beside it. With store/kv, its layered view of the file,
// it is the only package that imports bbolt (and store/compact, which
// rewrites a stopped agent's file).
//
// # Writes and durability
//
// All writes go through one writer goroutine that groups the requests waiting
// at that moment into one group commit: their write-set is one record of the
// commit log (package commitlog, in LogDir), appended with one write and one
// fdatasync. [DB.Update] returns only after that, so whatever a caller
// acknowledges after Update returns survives a power cut. What the log holds
// lives in memory too (a kv.Layer over the file) until a checkpoint writes it
// into the file in one synced bbolt commit and trims the log (checkpoint.go);
// Open replays what a crash left in the log. Reads take a snapshot (a bbolt
// read transaction and the layer, O(1)) and never wait for the writer.
//
// # Layout
//
// The file holds these buckets (keys are byte strings):
//
//	meta        "schema_version" → uint32 BE; "identity" → JSON;
//	            "finished_through" → the newest task id whose retention
//	            entry is written (entries of tasks created final are
//	            written in later commits, finished.go)
//	tasks       task_id → Task JSON, or 0x01|0x02 len(uint32 BE) Task JSON
//	            and the JSON array of its first events (record.go)
//	events      task_id 0x00 seq(uint64 BE) → Event JSON, or a JSON array
//	            of the consecutive events of one write from seq on
//	finished    finished_at(unix ns, uint64 BE) task_id → empty (retention index)
//	idem        scope 0x00 key → an idempotency record of package agent (JSON)
//	idem_exp    created(unix ns, uint64 BE) scope 0x00 key → empty (expiry index)
//	tokens      token_id → Token JSON (auth/tokendb)
//	token_hash  sha256(token) → token_id (auth/tokendb)
//
// Created on first use (older files open unchanged); the domain records
// among them are kept by the package named, through [Records] (and its
// byte door, [RawBucket], for a domain that encodes its own keys and
// walks nested buckets); a domain that checks its records gives a
// [CheckFunc] to [DB.Check] and [CheckFile] (tier1.CheckRecords):
//
//	t1, t1_stats, t1_seen_o,
//	t1_outbox                          tier-1 frames, their counters, batch ids and export log (tier1; t1_seen_g of schemas 3-8 and t1_seen of schema 2)
//	peers                              agent_id → pinned peer JSON (peer/peerdb)
//	p2p_seen, p2p_seen_at              received message ids, for replay protection (peer/peerdb)
//	outbox, outbox_dead, outbox_id     messages to peers and webhooks, dead letters (outbox)
//	contracts, contracts_peer          negotiated protocol contracts, by id and by peer (contracts/contractdb)
//	registry                           the directory of agents registered here (registry)
//	hil (requests, steps, closed)      human-in-the-loop escalation state and audit (hil/hildb)
//	groups, group_votes, group_tasks,
//	group_events, group_event_ids      groups, their votes, tasks and event log (group/groupdb)
//	a2a_push                           A2A push-notification configs (the store's own: a2a.go)
//	audit                              the hash-chained log of security events (agent/auditdb)
//
// The schema version is checked on open; a file written by a newer schema is
// refused rather than misread.
//
// # Locking
//
// bbolt holds an exclusive flock on the file. A second process opening the
// same file waits [Options.LockTimeout] and then fails with [ErrLocked].
package store
