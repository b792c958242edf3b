package store

import "github.com/synapse-edge/synapse/store/kv"

// bucket is a bucket of the store as the domain code sees it: the only
// way its records are read and written (package kv: what was written
// since the last checkpoint merged over the file). A write goes into
// the transaction's layer and write-set, never into bbolt: the writer's
// checkpoints alone write the file (checkpoint.go).
type bucket = kv.Bucket

// cursor walks the records of a bucket in key order, both ways.
type cursor = kv.Cursor

// writable tells a write transaction from a read one.
func (tx *Tx) writable() bool { return tx.v.Writable() }

// root returns the top-level bucket name, nil when there is none.
func (tx *Tx) root(name []byte) *bucket { return tx.v.Root(name) }

// createRoot returns the top-level bucket name, creating it.
func (tx *Tx) createRoot(name []byte) (*bucket, error) { return tx.v.CreateRoot(name) }

// deleteRoot deletes the top-level bucket name and all it holds.
func (tx *Tx) deleteRoot(name []byte) error { return tx.v.DeleteRoot(name) }

// OnCommit calls fn after the transaction commits (never if it fails).
func (tx *Tx) OnCommit(fn func()) {
	if tx.v.Writable() {
		tx.onCommit = append(tx.onCommit, fn)
	}
}

// bucket returns the named bucket, creating it in a write transaction; in
// a read transaction a missing bucket is nil.
func (tx *Tx) bucket(name []byte) (*bucket, error) {
	if tx.writable() {
		return tx.createRoot(name)
	}
	return tx.root(name), nil
}
