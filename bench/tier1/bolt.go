package main

import (
	"fmt"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// boltCeiling writes frames straight into a bbolt file, opened with the
// options the agent's store uses (fsync on commit, no freelist sync, map
// freelist) and the same bucket fill percent for appends.
type boltCeiling struct {
	db *bolt.DB
}

var boltBucket = []byte("frames")

func openBolt(dir string) (*boltCeiling, error) {
	db, err := bolt.Open(filepath.Join(dir, "ceiling.db"), 0o600, &bolt.Options{
		Timeout:        5 * time.Second,
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	})
	if err != nil {
		return nil, fmt.Errorf("open bbolt: %w", err)
	}
	return &boltCeiling{db: db}, nil
}

func (b *boltCeiling) close() error { return b.db.Close() }

// write stores keys[i] → vals[i] in transactions of perTx records, one
// goroutine, each transaction fsynced on commit.
func (b *boltCeiling) write(keys, vals [][]byte, perTx int) (time.Duration, error) {
	start := time.Now()
	for off := 0; off < len(keys); off += perTx {
		end := min(off+perTx, len(keys))
		err := b.db.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists(boltBucket)
			if err != nil {
				return err
			}
			bk.FillPercent = 0.95
			for i := off; i < end; i++ {
				if err := bk.Put(keys[i], vals[i]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("bbolt transaction at record %d: %w", off, err)
		}
	}
	return time.Since(start), nil
}
