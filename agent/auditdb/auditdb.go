// Package auditdb keeps the audit log of security events (TP §7.5) in
// the store, through store.Records. The log is append-only and hash
// chained, under the keys the store used before the records left it (the
// layout is unchanged, byte for byte):
//
//	audit   seq(uint64 BE, the bucket's sequence) → Record JSON
//
// Each record holds the hash of the one before it (Prev) and its own hash
// (Hash = hex sha256 of the record's JSON with Hash empty). Editing,
// inserting or reordering any record breaks the chain at that record;
// Verify finds the first one that does not fit. (Cutting records off the
// end is not detectable from the chain alone: keep a copy of the last
// hash elsewhere to anchor it.) Package agent writes the events.
package auditdb

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/synapse-edge/synapse/store"
)

// raw are the records undecoded: Verify reports a record that does not
// decode instead of failing on it.
var raw = store.RawRecords("audit")

// Record is one security event.
type Record struct {
	Seq    uint64         `json:"seq"`
	At     time.Time      `json:"at"`
	Kind   string         `json:"kind"`
	Peer   string         `json:"peer,omitempty"`
	Detail map[string]any `json:"detail,omitempty"`
	Prev   string         `json:"prev"`
	Hash   string         `json:"hash"`
}

func hash(r *Record) (string, error) {
	c := *r
	c.Hash = ""
	b, err := json.Marshal(&c)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Append adds r at the end of the chain, setting its Seq, Prev and Hash.
func Append(tx *store.Tx, r *Record) error {
	r.Prev = ""
	err := raw.ScanBack(tx, nil, func(_ []byte, v *[]byte) error {
		var last Record
		if err := json.Unmarshal(*v, &last); err != nil {
			return fmt.Errorf("audit: last record: %w", err)
		}
		r.Prev = last.Hash
		return store.ErrStop
	})
	if err != nil {
		return err
	}
	if r.Seq, err = raw.NextSequence(tx); err != nil {
		return err
	}
	if r.Hash, err = hash(r); err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return raw.Put(tx, binary.BigEndian.AppendUint64(nil, r.Seq), &b)
}

// List returns up to limit records with seq > after, in order.
func List(tx *store.Tx, after uint64, limit int) ([]*Record, error) {
	var out []*Record
	err := raw.Scan(tx, binary.BigEndian.AppendUint64(nil, after+1), func(k []byte, v *[]byte) error {
		if len(out) >= limit {
			return store.ErrStop
		}
		r := new(Record)
		if err := json.Unmarshal(*v, r); err != nil {
			return fmt.Errorf("audit record %x: %w", k, err)
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// Report is the outcome of verifying the chain.
type Report struct {
	OK      bool   `json:"ok"`
	Records int    `json:"records"`
	BadSeq  uint64 `json:"first_bad_seq,omitempty"`
	Problem string `json:"problem,omitempty"`
	Last    string `json:"last_hash,omitempty"`
}

// Verify walks the whole chain.
func Verify(tx *store.Tx) Report {
	rep := Report{OK: true}
	prev := ""
	want := uint64(1)
	bad := func(seq uint64, format string, args ...any) {
		rep.OK, rep.BadSeq, rep.Problem = false, seq, fmt.Sprintf(format, args...)
	}
	err := raw.Scan(tx, nil, func(k []byte, v *[]byte) error {
		seq := binary.BigEndian.Uint64(k)
		var r Record
		if err := json.Unmarshal(*v, &r); err != nil {
			bad(seq, "record %d is not valid: %v", seq, err)
			return store.ErrStop
		}
		h, err := hash(&r)
		switch {
		case seq != want || r.Seq != seq:
			bad(seq, "record %d is out of sequence (expected %d)", seq, want)
			return store.ErrStop
		case r.Prev != prev:
			bad(seq, "record %d does not follow the record before it", seq)
			return store.ErrStop
		case err != nil || h != r.Hash:
			bad(seq, "record %d was altered (its hash does not match)", seq)
			return store.ErrStop
		}
		prev, want = r.Hash, want+1
		rep.Records++
		return nil
	})
	if err != nil { // raw records always decode: not reached
		bad(want, "%v", err)
	}
	if rep.OK {
		rep.Last = prev
	}
	return rep
}

// VerifyFile verifies the audit chain of a data file no process is
// serving.
func VerifyFile(ctx context.Context, path string) (Report, error) {
	var rep Report
	err := store.ViewFile(ctx, path, func(tx *store.Tx) error {
		rep = Verify(tx)
		return nil
	})
	if err != nil {
		return Report{}, fmt.Errorf("audit %s: %w", path, err)
	}
	return rep, nil
}
