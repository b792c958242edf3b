package store

import bolt "go.etcd.io/bbolt"

// bucket is a bucket of the store as the domain code sees it: the only
// way its records are read and written. It mirrors the part of bbolt's
// Bucket the store uses, so that what lies below (bbolt's pages, or the
// commit log's write-sets over them) is the business of this file alone.
//
// Cursors and ForEach visit the key/value records of a bucket; a bucket
// that holds nested buckets is walked with ForEachBucket.
type bucket struct{ b *bolt.Bucket }

// cursor walks the records of a bucket in key order, both ways.
type cursor struct{ c *bolt.Cursor }

func wrapBucket(b *bolt.Bucket) *bucket {
	if b == nil {
		return nil
	}
	return &bucket{b: b}
}

// root returns the top-level bucket name, nil when there is none.
func (tx *Tx) root(name []byte) *bucket { return wrapBucket(tx.tx.Bucket(name)) }

// createRoot returns the top-level bucket name, creating it.
func (tx *Tx) createRoot(name []byte) (*bucket, error) {
	b, err := tx.tx.CreateBucketIfNotExists(name)
	return wrapBucket(b), err
}

// deleteRoot deletes the top-level bucket name and all it holds.
func (tx *Tx) deleteRoot(name []byte) error { return tx.tx.DeleteBucket(name) }

// writable tells a write transaction from a read one.
func (tx *Tx) writable() bool { return tx.tx.Writable() }

// Get returns the value of key, nil when absent; it is valid for the
// transaction's life.
func (b *bucket) Get(key []byte) []byte { return b.b.Get(key) }

// Put sets the value of key.
func (b *bucket) Put(key, value []byte) error { return b.b.Put(key, value) }

// Delete removes key; an absent key is no error.
func (b *bucket) Delete(key []byte) error { return b.b.Delete(key) }

// Cursor returns a cursor over the bucket's records.
func (b *bucket) Cursor() *cursor { return &cursor{c: b.b.Cursor()} }

// ForEach calls fn for every record in key order, stopping at its first
// error.
func (b *bucket) ForEach(fn func(k, v []byte) error) error { return b.b.ForEach(fn) }

// ForEachBucket calls fn with the name of every nested bucket in order.
func (b *bucket) ForEachBucket(fn func(name []byte) error) error { return b.b.ForEachBucket(fn) }

// Bucket returns the nested bucket name, nil when there is none.
func (b *bucket) Bucket(name []byte) *bucket { return wrapBucket(b.b.Bucket(name)) }

// CreateBucketIfNotExists returns the nested bucket name, creating it.
func (b *bucket) CreateBucketIfNotExists(name []byte) (*bucket, error) {
	nb, err := b.b.CreateBucketIfNotExists(name)
	return wrapBucket(nb), err
}

// DeleteBucket deletes the nested bucket name and all it holds.
func (b *bucket) DeleteBucket(name []byte) error { return b.b.DeleteBucket(name) }

// NextSequence increments the bucket's sequence and returns it.
func (b *bucket) NextSequence() (uint64, error) { return b.b.NextSequence() }

// Sequence is the bucket's sequence.
func (b *bucket) Sequence() uint64 { return b.b.Sequence() }

// KeyN counts the bucket's records.
func (b *bucket) KeyN() int { return b.b.Stats().KeyN }

// First moves to the first record; k is nil when there is none.
func (c *cursor) First() (k, v []byte) { return c.c.First() }

// Last moves to the last record.
func (c *cursor) Last() (k, v []byte) { return c.c.Last() }

// Seek moves to the first record at or after key.
func (c *cursor) Seek(key []byte) (k, v []byte) { return c.c.Seek(key) }

// Next moves to the next record.
func (c *cursor) Next() (k, v []byte) { return c.c.Next() }

// Prev moves to the previous record.
func (c *cursor) Prev() (k, v []byte) { return c.c.Prev() }

// Delete removes the record the cursor is at.
func (c *cursor) Delete() error { return c.c.Delete() }

// sequential tells the bucket that its keys arrive mostly in order, so
// its pages may be filled fuller.
func (b *bucket) sequential() { b.b.FillPercent = 0.95 }

// OnCommit calls fn after the transaction commits (never if it rolls back).
func (tx *Tx) OnCommit(fn func()) { tx.tx.OnCommit(fn) }
