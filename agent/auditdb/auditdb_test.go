package auditdb_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/synapse-edge/synapse/agent/auditdb"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/store/storetest"
)

// writeAudit stores n records in a fresh file and closes it.
func writeAudit(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), store.FileName)
	db, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		err := db.Update(context.Background(), func(tx *store.Tx) error {
			return auditdb.Append(tx, &auditdb.Record{At: time.Unix(int64(i), 0).UTC(), Kind: "contract_made", Peer: "p",
				Detail: map[string]any{"contract_id": fmt.Sprintf("c-%d", i)}})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return path
}

// rawEdit changes the stored bytes of the audit bucket with bbolt itself,
// as someone with access to the file could.
func rawEdit(t *testing.T, path string, fn func(b *bolt.Bucket) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error { return fn(tx.Bucket([]byte("audit"))) }); err != nil {
		t.Fatal(err)
	}
}

func seqKey(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

func TestAuditChain(t *testing.T) {
	const n = 5
	path := writeAudit(t, n)
	rep, err := auditdb.VerifyFile(context.Background(), path)
	if err != nil || !rep.OK || rep.Records != n || rep.Last == "" {
		t.Fatalf("intact chain: %+v, %v", rep, err)
	}
	db := storetest.OpenPath(t, path)
	var recs []*auditdb.Record
	if err := db.View(func(tx *store.Tx) error {
		var err error
		recs, err = auditdb.List(tx, 0, 100)
		return err
	}); err != nil || len(recs) != n {
		t.Fatalf("Audit: %d records, %v", len(recs), err)
	}
	for i := 1; i < n; i++ {
		if recs[i].Prev != recs[i-1].Hash || recs[i].Seq != uint64(i+1) {
			t.Fatalf("record %d does not chain to %d", recs[i].Seq, recs[i-1].Seq)
		}
	}
	if err := db.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	for seq := uint64(1); seq <= n; seq++ {
		t.Run(fmt.Sprintf("editing record %d breaks the chain there", seq), func(t *testing.T) {
			p := writeAudit(t, n)
			rawEdit(t, p, func(b *bolt.Bucket) error {
				var r map[string]any
				if err := json.Unmarshal(b.Get(seqKey(seq)), &r); err != nil {
					return err
				}
				r["peer"] = "someone else"
				raw, _ := json.Marshal(r)
				return b.Put(seqKey(seq), raw)
			})
			rep, err := auditdb.VerifyFile(context.Background(), p)
			if err != nil || rep.OK || rep.BadSeq != seq {
				t.Errorf("after editing %d: %+v, %v; want the chain broken at %d", seq, rep, err, seq)
			}
		})
	}
	t.Run("removing a record in the middle breaks the chain", func(t *testing.T) {
		p := writeAudit(t, n)
		rawEdit(t, p, func(b *bolt.Bucket) error { return b.Delete(seqKey(3)) })
		if rep, _ := auditdb.VerifyFile(context.Background(), p); rep.OK || rep.BadSeq != 4 {
			t.Errorf("after removing 3: %+v, want broken at 4", rep)
		}
	})
	t.Run("recomputing a hash does not hide an edit", func(t *testing.T) {
		p := writeAudit(t, n)
		rawEdit(t, p, func(b *bolt.Bucket) error {
			var r auditdb.Record
			if err := json.Unmarshal(b.Get(seqKey(2)), &r); err != nil {
				return err
			}
			// Edit record 2 and give it the right hash for its new
			// content: the next record still names the old hash.
			r.Kind, r.Hash = "nothing_happened", ""
			body, _ := json.Marshal(&r)
			sum := sha256.Sum256(body)
			r.Hash = hex.EncodeToString(sum[:])
			raw, _ := json.Marshal(&r)
			return b.Put(seqKey(2), raw)
		})
		if rep, _ := auditdb.VerifyFile(context.Background(), p); rep.OK || rep.BadSeq != 3 {
			t.Errorf("after rewriting record 2 with a fresh hash: %+v, want broken at 3", rep)
		}
	})
}
