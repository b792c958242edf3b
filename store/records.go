package store

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Records is the typed-bucket helper: how a domain package (tier1,
// outbox, group, hil, ...) keeps its own records in the store without
// the store knowing them. A domain declares its bucket once, by its path
// from the top (a top-level bucket and, optionally, nested ones) and the
// codec of its records, and reads and writes through a Tx:
//
//	var requests = store.JSONRecords[Request]("hil", "requests")
//
//	err := requests.Put(tx, []byte(r.TaskID), &r)
//	r, err := requests.Get(tx, []byte(id))
//
// Every write lands in the transaction's layer and write-set (package
// kv), so it is logged, read back at once and checkpointed as any other:
// Records is the only door domain writes take to the file, and bbolt
// stays private to package store. Buckets are created by the first write
// that needs them, so files written before a bucket existed open
// unchanged; reads of a missing bucket see no records.
//
// A Records value is immutable and safe to share; declare it as a
// package variable.
//
// The work is done by the untyped records below, once for every record
// type: Go compiles a generic method once per shape of T, and each
// struct type is a shape of its own, so the typed methods are kept to a
// line or two (issue 31 added a dozen record types; with the bodies
// generic they cost the release binary about 100 KiB).
type Records[T any] struct {
	r *records
}

// records is a bucket path with its codec, over values of any type: the
// typed Records pass a *T as v.
type records struct {
	path   [][]byte
	name   string
	encode func(dst []byte, v any) ([]byte, error)
	decode func(raw []byte, v any) error
}

// NewRecords declares the records of the bucket at path (one name or
// more, top-level first) with their codec: encode appends v's encoding
// to dst, decode fills v from raw (which is valid only during the call:
// copy what is kept).
func NewRecords[T any](encode func(dst []byte, v *T) ([]byte, error), decode func(raw []byte, v *T) error, path ...string) Records[T] {
	return Records[T]{newRecords(path,
		func(dst []byte, v any) ([]byte, error) { return encode(dst, v.(*T)) },
		func(raw []byte, v any) error { return decode(raw, v.(*T)) })}
}

func newRecords(path []string, encode func([]byte, any) ([]byte, error), decode func([]byte, any) error) *records {
	if len(path) == 0 {
		panic("store: NewRecords without a bucket path")
	}
	p := make([][]byte, len(path))
	for i, name := range path {
		if name == "" {
			panic("store: NewRecords with an empty bucket name")
		}
		p[i] = []byte(name)
	}
	r := &records{path: p, encode: encode, decode: decode}
	r.name = r.pathString()
	return r
}

func encodeJSON(dst []byte, v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if len(dst) == 0 {
		return raw, err // nothing to append to: no copy
	}
	return append(dst, raw...), err
}

func decodeJSON(raw []byte, v any) error { return json.Unmarshal(raw, v) }

// JSONRecords declares records kept as JSON (encoding/json) in the bucket
// at path.
func JSONRecords[T any](path ...string) Records[T] {
	return Records[T]{newRecords(path, encodeJSON, decodeJSON)}
}

// RawRecords declares records whose values are bytes, kept as they are
// (indexes, markers, values a domain encodes itself).
func RawRecords(path ...string) Records[[]byte] {
	return Records[[]byte]{newRecords(path,
		func(dst []byte, v any) ([]byte, error) { return append(dst, *v.(*[]byte)...), nil },
		func(raw []byte, v any) error { p := v.(*[]byte); *p = append((*p)[:0], raw...); return nil })}
}

// Path is the bucket's path, top-level first, for messages.
func (r Records[T]) Path() string { return r.r.name }

func (r *records) pathString() string {
	s := ""
	for i, name := range r.path {
		if i > 0 {
			s += "/"
		}
		s += string(name)
	}
	return s
}

// bucket returns the records' bucket in tx, nil when it (or a bucket on
// its path) does not exist.
func (r *records) bucket(tx *Tx) *bucket {
	b := tx.root(r.path[0])
	for _, name := range r.path[1:] {
		if b == nil {
			return nil
		}
		b = b.Bucket(name)
	}
	return b
}

// create returns the records' bucket in tx, creating the buckets of its
// path that are missing. tx must be a write transaction.
func (r *records) create(tx *Tx) (*bucket, error) {
	if !tx.writable() {
		return nil, fmt.Errorf("store: write to %s in a read transaction", r.name)
	}
	b, err := tx.createRoot(r.path[0])
	for _, name := range r.path[1:] {
		if err != nil {
			break
		}
		b, err = b.CreateBucketIfNotExists(name)
	}
	if err != nil {
		return nil, fmt.Errorf("store: bucket %s: %w", r.name, err)
	}
	return b, nil
}

func (r *records) decodeAt(key, raw []byte, v any) error {
	if err := r.decode(raw, v); err != nil {
		return fmt.Errorf("decode %s record %q: %w", r.name, key, err)
	}
	return nil
}

// Get reads the record of key into a new value; ErrNotFound when there
// is none.
func (r Records[T]) Get(tx *Tx, key []byte) (*T, error) {
	v := new(T)
	if err := r.r.getInto(tx, key, v); err != nil {
		return nil, err
	}
	return v, nil
}

// GetInto reads the record of key into v; ErrNotFound when there is none.
func (r Records[T]) GetInto(tx *Tx, key []byte, v *T) error { return r.r.getInto(tx, key, v) }

func (r *records) getInto(tx *Tx, key []byte, v any) error {
	b := r.bucket(tx)
	if b == nil {
		return ErrNotFound
	}
	raw := b.Get(key)
	if raw == nil {
		return ErrNotFound
	}
	return r.decodeAt(key, raw, v)
}

// Has tells whether key has a record.
func (r Records[T]) Has(tx *Tx, key []byte) bool { return r.r.has(tx, key) }

func (r *records) has(tx *Tx, key []byte) bool {
	b := r.bucket(tx)
	return b != nil && b.Get(key) != nil
}

// Put writes v as the record of key.
func (r Records[T]) Put(tx *Tx, key []byte, v *T) error { return r.r.put(tx, key, v) }

func (r *records) put(tx *Tx, key []byte, v any) error {
	b, err := r.create(tx)
	if err != nil {
		return err
	}
	raw, err := r.encode(nil, v)
	if err != nil {
		return fmt.Errorf("encode %s record %q: %w", r.name, key, err)
	}
	return b.Put(key, raw)
}

// Create writes v as the record of key and fails with ErrExists when key
// has one already.
func (r Records[T]) Create(tx *Tx, key []byte, v *T) error {
	if r.r.has(tx, key) {
		return fmt.Errorf("%s record %q: %w", r.r.name, key, ErrExists)
	}
	return r.r.put(tx, key, v)
}

// Delete removes the record of key; an absent record is no error.
func (r Records[T]) Delete(tx *Tx, key []byte) error { return r.r.delete(tx, key) }

func (r *records) delete(tx *Tx, key []byte) error {
	if r.bucket(tx) == nil {
		return nil
	}
	b, err := r.create(tx)
	if err != nil {
		return err
	}
	return b.Delete(key)
}

// Count is the number of records.
func (r Records[T]) Count(tx *Tx) int {
	b := r.r.bucket(tx)
	if b == nil {
		return 0
	}
	return b.KeyN()
}

// NextSequence increments the bucket's sequence and returns it (1 first),
// creating the bucket.
func (r Records[T]) NextSequence(tx *Tx) (uint64, error) { return r.r.nextSequence(tx) }

func (r *records) nextSequence(tx *Tx) (uint64, error) {
	b, err := r.create(tx)
	if err != nil {
		return 0, err
	}
	return b.NextSequence()
}

// Sequence is the bucket's sequence, 0 when the bucket does not exist.
func (r Records[T]) Sequence(tx *Tx) uint64 {
	b := r.r.bucket(tx)
	if b == nil {
		return 0
	}
	return b.Sequence()
}

// ErrStop, returned by a Scan's fn, ends the scan without an error.
var ErrStop = errors.New("stop the scan")

// Scan calls fn with each record whose key is at or after from (all of
// them when from is nil), in key order, until fn returns an error: the
// scan returns it, or nil for ErrStop. key and v are valid only during
// the call. fn may delete the record it is given, and nothing else.
func (r Records[T]) Scan(tx *Tx, from []byte, fn func(key []byte, v *T) error) error {
	return r.scan(tx, from, false, fn)
}

// ScanBack is Scan in descending key order, from the last record at or
// before from (the last of all when from is nil).
func (r Records[T]) ScanBack(tx *Tx, from []byte, fn func(key []byte, v *T) error) error {
	return r.scan(tx, from, true, fn)
}

func (r Records[T]) scan(tx *Tx, from []byte, back bool, fn func(key []byte, v *T) error) error {
	v := new(T)
	return r.r.scan(tx, from, back, func(key, raw []byte) error {
		var zero T
		*v = zero
		if err := r.r.decodeAt(key, raw, v); err != nil {
			return err
		}
		return fn(key, v)
	})
}

// scan calls fn with each record's key and encoding, in the order Scan
// or ScanBack gives.
func (r *records) scan(tx *Tx, from []byte, back bool, fn func(key, raw []byte) error) error {
	b := r.bucket(tx)
	if b == nil {
		return nil
	}
	return scanBucket(b, from, back, fn)
}

// scanBucket is records.scan over the bucket b (not nil).
func scanBucket(b *bucket, from []byte, back bool, fn func(key, raw []byte) error) error {
	c := b.Cursor()
	var k, raw []byte
	switch {
	case from == nil && back:
		k, raw = c.Last()
	case from == nil:
		k, raw = c.First()
	case back:
		k, raw = c.Seek(from)
		if k == nil {
			k, raw = c.Last()
		} else if string(k) != string(from) {
			k, raw = c.Prev()
		}
	default:
		k, raw = c.Seek(from)
	}
	for k != nil {
		// The cursor skips nested buckets: every k here is a record's.
		if err := fn(k, raw); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
		if back {
			k, raw = c.Prev()
		} else {
			k, raw = c.Next()
		}
	}
	return nil
}

// In declares the records of the bucket name nested in r's bucket (one
// bucket per owner, as a group's event log), with r's codec.
func (r Records[T]) In(name string) Records[T] { return Records[T]{r.r.in(name)} }

func (r *records) in(name string) *records {
	if name == "" {
		panic("store: Records.In with an empty bucket name")
	}
	p := make([][]byte, len(r.path), len(r.path)+1)
	copy(p, r.path)
	n := &records{path: append(p, []byte(name)), encode: r.encode, decode: r.decode}
	n.name = n.pathString()
	return n
}

// Drop deletes the records' bucket with all it holds (nested buckets
// included); a missing bucket is no error.
func (r Records[T]) Drop(tx *Tx) error { return r.r.drop(tx) }

func (r *records) drop(tx *Tx) error {
	if r.bucket(tx) == nil {
		return nil
	}
	if !tx.writable() {
		return fmt.Errorf("store: drop %s in a read transaction", r.name)
	}
	last := r.path[len(r.path)-1]
	if len(r.path) == 1 {
		return tx.deleteRoot(last)
	}
	parent := &records{path: r.path[:len(r.path)-1]}
	parent.name = parent.pathString()
	pb, err := parent.create(tx)
	if err != nil {
		return err
	}
	return pb.DeleteBucket(last)
}
