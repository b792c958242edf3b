package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/synapse-edge/synapse/store/taskrec"
	"github.com/synapse-edge/synapse/wire"
)

// The retention index entry of a task created final (a sync-mode echo is
// stored once, completed) is not written in the task's own transaction:
// that would copy a second B+tree's path to the root into every such
// commit (two of its seven pages). The writer keeps the entries and puts
// them in a later commit, many at once: when finFlushN are waiting, when
// the oldest has waited finFlushAge, before PruneFinished reads the index
// and when the store closes.
//
// The meta record "finished_through" holds the id of the newest task whose
// entry is written (a UUID v7, so in creation order). An entry lost to a
// crash belongs to a task created after it, and Open indexes again the
// final tasks created since then (less finRecoverSkew, for a clock that
// stepped back a little; Open decodes each, so the margin stays short: an
// entry of a task created after a bigger step back, lost to a crash, only
// keeps that task from retention).
const (
	finFlushN      = 256
	finFlushAge    = 2 * time.Second
	finRecoverSkew = time.Second
)

var keyFinishedThrough = []byte("finished_through")

// finPending is the writer's state of entries not yet in the index.
type finPending struct {
	keys  [][]byte // finished_at task_id, in commit order
	since time.Time
	// age is how long the oldest entry may wait: finFlushAge when zero
	// (a test sets it longer, so a slow machine's flush by age does not
	// land in the middle of what it counts).
	age time.Duration
}

// deferFinished queues t's retention index entry; a transaction outside
// the writer (none today) writes it at once.
func (tx *Tx) deferFinished(t *wire.Task) error {
	k := append(beTime(t.UpdatedAt), t.ID...)
	if tx.db == nil {
		return tx.b(bucketFinished).Put(k, nil)
	}
	tx.deferred = append(tx.deferred, k)
	return nil
}

// flushFinished writes the waiting entries (those of earlier commits and
// of this transaction so far) into the index; they are forgotten once
// this transaction commits (finishedCommitted).
func (tx *Tx) flushFinished() error {
	if tx.db == nil {
		return nil
	}
	fin := tx.b(bucketFinished)
	var last []byte
	put := func(keys [][]byte) error {
		for _, k := range keys {
			if err := fin.Put(k, nil); err != nil {
				return err
			}
			if id := k[8:]; bytes.Compare(id, last) > 0 {
				last = id
			}
		}
		return nil
	}
	if !tx.flushedPending {
		if err := put(tx.db.fin.keys); err != nil {
			return err
		}
		tx.flushedPending = true
	}
	if err := put(tx.deferred[tx.flushedDeferred:]); err != nil {
		return err
	}
	tx.flushedDeferred = len(tx.deferred)
	if last == nil {
		return nil
	}
	return tx.b(bucketMeta).Put(keyFinishedThrough, last)
}

// finishedDue reports whether the waiting entries go into tx's commit.
func (db *DB) finishedDue(tx *Tx) bool {
	n := len(tx.deferred) - tx.flushedDeferred
	if !tx.flushedPending {
		n += len(db.fin.keys)
	}
	age := db.fin.age
	if age == 0 {
		age = finFlushAge
	}
	return n >= finFlushN || (n > 0 && len(db.fin.keys) > 0 && !tx.flushedPending && time.Since(db.fin.since) >= age)
}

// finishedCommitted updates the waiting entries after tx committed.
func (db *DB) finishedCommitted(tx *Tx) {
	if tx.flushedPending {
		clear(db.fin.keys)
		db.fin.keys = db.fin.keys[:0]
	}
	if rest := tx.deferred[tx.flushedDeferred:]; len(rest) > 0 {
		if len(db.fin.keys) == 0 {
			db.fin.since = time.Now()
		}
		db.fin.keys = append(db.fin.keys, rest...)
	}
}

// finishedRecovered tells whether recoverFinished has nothing to do.
func finishedRecovered(tx *Tx) bool {
	newest, _ := tx.root(bucketTasks).Cursor().Last()
	through := tx.root(bucketMeta).Get(keyFinishedThrough)
	return through != nil && (newest == nil || bytes.Equal(through, newest))
}

// recoverFinished indexes the final tasks created since the newest
// written entry (less finRecoverSkew) and marks the file as indexed
// through its newest task. Open runs it before the writer starts.
func recoverFinished(tx *Tx) error {
	meta, tasks, fin := tx.root(bucketMeta), tx.root(bucketTasks), tx.root(bucketFinished)
	c := tasks.Cursor()
	newest, _ := c.Last()
	through := meta.Get(keyFinishedThrough)
	switch {
	case newest == nil && through == nil:
		// "-" sorts before every id: a crash before the first flush is
		// recovered from the first task.
		return meta.Put(keyFinishedThrough, []byte("-"))
	case newest == nil:
		return nil
	case through == nil:
		// A file no writer has deferred an entry of: its index is whole.
		return meta.Put(keyFinishedThrough, bytes.Clone(newest))
	}
	if bytes.Equal(through, newest) {
		return nil
	}
	var k, v []byte
	if ms, ok := uuidMillis(through); ok && ms > finRecoverSkew.Milliseconds() {
		k, v = c.Seek(fmt.Appendf(nil, "%08x-%04x", uint64(ms-finRecoverSkew.Milliseconds())>>16, uint64(ms-finRecoverSkew.Milliseconds())&0xffff))
	} else {
		k, v = c.First()
	}
	var t wire.Task
	for ; k != nil; k, v = c.Next() {
		if !taskrec.Kept(v) {
			continue // indexed in its own write
		}
		if err := decodeTask(string(k), v, &t); err != nil || !t.Status.Terminal() {
			continue // Check reports a record that does not decode
		}
		if err := fin.Put(append(beTime(t.UpdatedAt), k...), nil); err != nil {
			return err
		}
	}
	return meta.Put(keyFinishedThrough, bytes.Clone(newest))
}

// uuidMillis is the time of a UUID v7 in its text form, in ms.
func uuidMillis(id []byte) (int64, bool) {
	if len(id) < 13 || id[8] != '-' {
		return 0, false
	}
	var b [6]byte
	hex := append(append([]byte(nil), id[:8]...), id[9:13]...)
	for i := range b {
		hi, ok1 := unhex(hex[2*i])
		lo, ok2 := unhex(hex[2*i+1])
		if !ok1 || !ok2 {
			return 0, false
		}
		b[i] = hi<<4 | lo
	}
	return int64(binary.BigEndian.Uint64(append([]byte{0, 0}, b[:]...))), true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
