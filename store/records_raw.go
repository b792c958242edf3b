package store

import "errors"

// RawBucket is the bucket of a Records opened in one transaction for
// byte access: for the domain that encodes its own keys and values and
// walks them in order (tier-1's frame blocks, one nested bucket per
// routine, and its batch-id groups), and that puts many records in one
// write without looking the bucket up for each.
//
//	var frames = store.RawRecords("t1")
//
//	b, err := frames.CreateRaw(tx)      // a write: the buckets are created
//	r, err := b.CreateBucket([]byte(capID))
//	err = r.Put(key, block)
//	err = frames.Raw(tx).Bucket([]byte(capID)).Scan(from, fn)
//
// Its writes are the transaction's as every other Records write (the
// layer and the write-set, so the commit log): it is one more door to
// the same path, not to bbolt. The zero RawBucket is a bucket that does
// not exist: it reads as empty, and its writes fail.
//
// A RawBucket is a value (opening one allocates nothing) and valid only
// during its transaction.
type RawBucket struct {
	b *bucket
}

var errNoBucket = errors.New("store: write to a bucket that does not exist")

// Raw opens the records' bucket in tx for byte access; the zero
// RawBucket when it (or a bucket on its path) does not exist. It creates
// nothing, in a write transaction too.
func (r Records[T]) Raw(tx *Tx) RawBucket { return RawBucket{r.r.bucket(tx)} }

// CreateRaw opens the records' bucket in tx for byte access, creating
// the buckets of its path that are missing. tx must be a write
// transaction.
func (r Records[T]) CreateRaw(tx *Tx) (RawBucket, error) {
	b, err := r.r.create(tx)
	return RawBucket{b}, err
}

// Exists tells whether the bucket exists.
func (b RawBucket) Exists() bool { return b.b != nil }

// Get returns the value of key, nil when there is none. It is valid for
// the transaction's life and must not be changed.
func (b RawBucket) Get(key []byte) []byte {
	if b.b == nil {
		return nil
	}
	return b.b.Get(key)
}

// Put sets the value of key; both are copied.
func (b RawBucket) Put(key, value []byte) error {
	if b.b == nil {
		return errNoBucket
	}
	return b.b.Put(key, value)
}

// Delete removes the record of key; an absent record is no error.
func (b RawBucket) Delete(key []byte) error {
	if b.b == nil {
		return nil
	}
	return b.b.Delete(key)
}

// NextSequence increments the bucket's sequence and returns it (1 first).
func (b RawBucket) NextSequence() (uint64, error) {
	if b.b == nil {
		return 0, errNoBucket
	}
	return b.b.NextSequence()
}

// Count is the number of the bucket's own records (its nested buckets'
// are not counted).
func (b RawBucket) Count() int {
	if b.b == nil {
		return 0
	}
	return b.b.KeyN()
}

// Scan calls fn with each record whose key is at or after from (all of
// them when from is nil), in key order, until fn returns an error: the
// scan returns it, or nil for ErrStop. key and value are valid only
// during the call. fn may delete the record it is given, and nothing
// else. Nested buckets are not records: the scan skips them.
func (b RawBucket) Scan(from []byte, fn func(key, value []byte) error) error {
	if b.b == nil {
		return nil
	}
	return scanBucket(b.b, from, false, fn)
}

// Bucket opens the bucket name nested in b; the zero RawBucket when
// there is none.
func (b RawBucket) Bucket(name []byte) RawBucket {
	if b.b == nil {
		return b
	}
	return RawBucket{b.b.Bucket(name)}
}

// CreateBucket opens the bucket name nested in b, creating it.
func (b RawBucket) CreateBucket(name []byte) (RawBucket, error) {
	if b.b == nil {
		return b, errNoBucket
	}
	n, err := b.b.CreateBucketIfNotExists(name)
	return RawBucket{n}, err
}

// Buckets calls fn with the name of each bucket nested in b, in order,
// until fn returns an error: Buckets returns it, or nil for ErrStop.
func (b RawBucket) Buckets(fn func(name []byte) error) error {
	if b.b == nil {
		return nil
	}
	err := b.b.ForEachBucket(fn)
	if errors.Is(err, ErrStop) {
		return nil
	}
	return err
}
