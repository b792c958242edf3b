package compact

import (
	"errors"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/synapse-edge/synapse/store"
)

// Usage is where the bytes of a data file go.
type Usage struct {
	FileBytes int64
	// HighWater is the bytes up to the file's highest page in use (the
	// rest of the file is preallocated); FreeBytes those of its free
	// pages below it.
	HighWater, FreeBytes int64
	PageSize             int
	Buckets              map[string]BucketUsage
}

// BucketUsage is one top-level bucket (nested buckets included).
type BucketUsage struct {
	Keys       int
	ValueBytes int64 // the bytes of its values (records)
	KeyBytes   int64
	PageBytes  int64 // the bytes of its pages (branch, leaf, overflow)
}

// Measure reads the usage of the data file at path (a stopped agent's:
// store.ErrLocked otherwise).
func Measure(path string) (Usage, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Usage{}, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 200e6})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return Usage{}, fmt.Errorf("measure %s: %w", path, store.ErrLocked)
	}
	if err != nil {
		return Usage{}, err
	}
	defer db.Close()
	u := Usage{FileBytes: fi.Size(), PageSize: db.Info().PageSize, Buckets: map[string]BucketUsage{}}
	err = db.View(func(tx *bolt.Tx) error {
		u.HighWater = int64(tx.Size())
		// A read-only open counts the free pages from the file's freelist
		// (or every page when it has none).
		u.FreeBytes = int64(db.Stats().FreePageN) * int64(u.PageSize)
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			st := b.Stats()
			bu := BucketUsage{Keys: st.KeyN, PageBytes: int64(st.BranchPageN+st.BranchOverflowN+st.LeafPageN+st.LeafOverflowN) * int64(u.PageSize)}
			var walk func(b *bolt.Bucket)
			walk = func(b *bolt.Bucket) {
				_ = b.ForEach(func(k, v []byte) error {
					bu.KeyBytes += int64(len(k))
					if v == nil {
						if nb := b.Bucket(k); nb != nil {
							walk(nb)
						}
						return nil
					}
					bu.ValueBytes += int64(len(v))
					return nil
				})
			}
			walk(b)
			u.Buckets[string(name)] = bu
			return nil
		})
	})
	return u, err
}
