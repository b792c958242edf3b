package compact

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/synapse-edge/synapse/store"
)

// TempSuffix names the copy beside the data file while it is written.
const TempSuffix = ".compact"

// defaultTxBytes bounds what one transaction of the copy holds (its
// dirty pages are in memory until it commits).
const defaultTxBytes = 4 << 20

// Result is what a compaction did.
type Result struct {
	Before, After int64 // file sizes in bytes
	Keys          int64 // records and buckets copied
	Took          time.Duration
}

// Options tune File.
type Options struct {
	// Progress, when set, is called now and then with the records
	// copied so far and their total.
	Progress func(done, total int64)
	// LockTimeout is how long File waits for another process to release
	// the file before it fails with store.ErrLocked. Default 200 ms.
	LockTimeout time.Duration
	// crash, for tests, is called at each step; an error it returns
	// stops the compaction there, as a kill would.
	crash func(step string) error
	// txBytes overrides defaultTxBytes (tests).
	txBytes int
}

// File compacts the data file at path (no agent may be serving it:
// store.ErrLocked otherwise).
func File(ctx context.Context, path string, o Options) (Result, error) {
	start := time.Now()
	if o.LockTimeout <= 0 {
		o.LockTimeout = 200 * time.Millisecond
	}
	if o.txBytes <= 0 {
		o.txBytes = defaultTxBytes
	}
	fi, err := os.Stat(path)
	if err != nil {
		return Result{}, fmt.Errorf("compact: %w", err)
	}
	res := Result{Before: fi.Size()}
	// The store's open replays the commit log into the file, its close
	// checkpoints: the file alone then holds every write.
	db, err := store.Open(ctx, path, store.Options{LockTimeout: o.LockTimeout})
	if err != nil {
		return res, fmt.Errorf("compact: %w", err)
	}
	if err := db.Close(ctx); err != nil {
		return res, fmt.Errorf("compact: %w", err)
	}
	if err := step(o, "opened"); err != nil {
		return res, err
	}
	// Held until the new file is in place: no agent opens the old one
	// meanwhile (store.Open also checks that the file it locked is still
	// the one at its path).
	src, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: o.LockTimeout, FreelistType: bolt.FreelistMapType})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return res, fmt.Errorf("compact %s: %w", path, store.ErrLocked)
	}
	if err != nil {
		return res, fmt.Errorf("compact: %w", err)
	}
	defer src.Close()
	tmp := path + TempSuffix
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return res, fmt.Errorf("compact: remove the copy an interrupted compaction left: %w", err)
	}
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{NoSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return res, fmt.Errorf("compact: %w", err)
	}
	dst.AllocSize = 4 << 20
	c := &copier{src: src, dst: dst, o: o, ctx: ctx}
	err = c.run()
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncFile(tmp)
	}
	if err == nil {
		err = step(o, "synced")
	}
	if err != nil {
		if !isCrash(err) {
			os.Remove(tmp)
		}
		return res, fmt.Errorf("compact: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return res, fmt.Errorf("compact: %w", err)
	}
	if err := step(o, "renamed"); err != nil {
		return res, err
	}
	if err := syncFile(filepath.Dir(path)); err != nil {
		return res, fmt.Errorf("compact: sync the directory: %w", err)
	}
	if fi, err := os.Stat(path); err == nil {
		res.After = fi.Size()
	}
	res.Keys, res.Took = c.done, time.Since(start)
	return res, nil
}

type crashErr struct{ step string }

func (e *crashErr) Error() string { return "stopped at " + e.step }

func isCrash(err error) bool {
	var c *crashErr
	return errors.As(err, &c)
}

func step(o Options, name string) error {
	if o.crash != nil && o.crash(name) != nil {
		return &crashErr{name}
	}
	return nil
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// copier copies src's buckets into dst in transactions of up to txBytes.
type copier struct {
	src, dst    *bolt.DB
	o           Options
	ctx         context.Context
	tx          *bolt.Tx
	size        int
	done, total int64
	// path and b are the destination bucket last written to, in tx.
	path [][]byte
	b    *bolt.Bucket
}

func (c *copier) run() error {
	return c.src.View(func(stx *bolt.Tx) error {
		if err := stx.ForEach(func(_ []byte, b *bolt.Bucket) error {
			c.total += int64(b.Stats().KeyN) + 1
			return nil
		}); err != nil {
			return err
		}
		var err error
		if c.tx, err = c.dst.Begin(true); err != nil {
			return err
		}
		c.progress()
		err = stx.ForEach(func(name []byte, b *bolt.Bucket) error {
			return c.bucket([][]byte{name}, b)
		})
		if err == nil {
			c.progress()
			return c.tx.Commit()
		}
		_ = c.tx.Rollback()
		return err
	})
}

// bucket creates the bucket at path in dst and copies src's records.
func (c *copier) bucket(path [][]byte, src *bolt.Bucket) error {
	if err := c.ctx.Err(); err != nil {
		return err
	}
	parent, err := c.at(path[:len(path)-1])
	if err != nil {
		return err
	}
	var b *bolt.Bucket
	if parent == nil {
		b, err = c.tx.CreateBucket(path[0])
	} else {
		b, err = parent.CreateBucket(path[len(path)-1])
	}
	if err != nil {
		return fmt.Errorf("bucket %q: %w", path, err)
	}
	if err := b.SetSequence(src.Sequence()); err != nil {
		return err
	}
	c.done++
	cur := src.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		if v == nil {
			if nb := src.Bucket(k); nb != nil {
				if err := c.bucket(append(path[:len(path):len(path)], bytes.Clone(k)), nb); err != nil {
					return err
				}
				continue
			}
		}
		b, err := c.at(path)
		if err != nil {
			return err
		}
		if err := b.Put(k, v); err != nil {
			return fmt.Errorf("bucket %q key %q: %w", path, k, err)
		}
		c.done++
		c.size += len(k) + len(v)
		if err := c.maybeCommit(); err != nil {
			return err
		}
	}
	return nil
}

// at is the destination bucket at path (nil for the top) in the current
// transaction, its fill factor set as the store's checkpoints set it.
func (c *copier) at(path [][]byte) (*bolt.Bucket, error) {
	if len(path) == 0 {
		return nil, nil
	}
	if c.b != nil && samePath(c.path, path) {
		return c.b, nil
	}
	b := c.tx.Bucket(path[0])
	for _, n := range path[1:] {
		if b == nil {
			break
		}
		b = b.Bucket(n)
	}
	if b == nil {
		return nil, fmt.Errorf("bucket %q missing in the copy", path)
	}
	if f := store.AppendFill(path); f > 0 {
		b.FillPercent = f
	}
	c.path, c.b = append(c.path[:0], path...), b
	return b, nil
}

func (c *copier) maybeCommit() error {
	if c.done%4096 == 0 {
		c.progress()
	}
	if c.size < c.o.txBytes {
		return nil
	}
	if err := step(c.o, "copying"); err != nil {
		return err
	}
	if err := c.tx.Commit(); err != nil {
		return err
	}
	var err error
	c.tx, err = c.dst.Begin(true)
	c.size, c.b = 0, nil
	return err
}

func samePath(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func (c *copier) progress() {
	if c.o.Progress != nil {
		c.o.Progress(c.done, c.total)
	}
}
