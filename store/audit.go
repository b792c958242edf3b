package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// The audit log of security events (TP §7.5) is append-only and hash
// chained:
//
//	audit   seq(uint64 BE, the bucket's sequence) → AuditRecord JSON
//
// Each record holds the hash of the one before it (Prev) and its own hash
// (Hash = hex sha256 of the record's JSON with Hash empty). Editing,
// inserting or reordering any record breaks the chain at that record;
// VerifyAudit finds the first one that does not fit. (Cutting records off
// the end is not detectable from the chain alone: keep a copy of the last
// hash elsewhere to anchor it.)
var bucketAudit = []byte("audit")

// AuditRecord is one security event.
type AuditRecord struct {
	Seq    uint64         `json:"seq"`
	At     time.Time      `json:"at"`
	Kind   string         `json:"kind"`
	Peer   string         `json:"peer,omitempty"`
	Detail map[string]any `json:"detail,omitempty"`
	Prev   string         `json:"prev"`
	Hash   string         `json:"hash"`
}

func auditHash(r *AuditRecord) (string, error) {
	c := *r
	c.Hash = ""
	b, err := json.Marshal(&c)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// AppendAudit adds r at the end of the chain, setting its Seq, Prev and
// Hash.
func (tx *Tx) AppendAudit(r *AuditRecord) error {
	b, err := tx.createRoot(bucketAudit)
	if err != nil {
		return err
	}
	r.Prev = ""
	if k, v := b.Cursor().Last(); k != nil {
		var last AuditRecord
		if err := json.Unmarshal(v, &last); err != nil {
			return fmt.Errorf("audit: last record: %w", err)
		}
		r.Prev = last.Hash
	}
	if r.Seq, err = b.NextSequence(); err != nil {
		return err
	}
	if r.Hash, err = auditHash(r); err != nil {
		return err
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return b.Put(binary.BigEndian.AppendUint64(nil, r.Seq), raw)
}

// Audit returns up to limit records with seq > after, in order.
func (tx *Tx) Audit(after uint64, limit int) ([]*AuditRecord, error) {
	b := tx.root(bucketAudit)
	if b == nil {
		return nil, nil
	}
	var out []*AuditRecord
	c := b.Cursor()
	for k, v := c.Seek(binary.BigEndian.AppendUint64(nil, after+1)); k != nil && len(out) < limit; k, v = c.Next() {
		r := new(AuditRecord)
		if err := json.Unmarshal(v, r); err != nil {
			return out, fmt.Errorf("audit record %x: %w", k, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// AuditReport is the outcome of verifying the chain.
type AuditReport struct {
	OK      bool   `json:"ok"`
	Records int    `json:"records"`
	BadSeq  uint64 `json:"first_bad_seq,omitempty"`
	Problem string `json:"problem,omitempty"`
	Last    string `json:"last_hash,omitempty"`
}

// VerifyAudit walks the whole chain.
func (tx *Tx) VerifyAudit() AuditReport {
	rep := AuditReport{OK: true}
	b := tx.root(bucketAudit)
	if b == nil {
		return rep
	}
	prev := ""
	want := uint64(1)
	bad := func(seq uint64, format string, args ...any) AuditReport {
		rep.OK, rep.BadSeq, rep.Problem = false, seq, fmt.Sprintf(format, args...)
		return rep
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		seq := binary.BigEndian.Uint64(k)
		var r AuditRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return bad(seq, "record %d is not valid: %v", seq, err)
		}
		h, err := auditHash(&r)
		switch {
		case seq != want || r.Seq != seq:
			return bad(seq, "record %d is out of sequence (expected %d)", seq, want)
		case r.Prev != prev:
			return bad(seq, "record %d does not follow the record before it", seq)
		case err != nil || h != r.Hash:
			return bad(seq, "record %d was altered (its hash does not match)", seq)
		}
		prev, want = r.Hash, want+1
		rep.Records++
	}
	rep.Last = prev
	return rep
}

// VerifyAuditFile verifies the audit chain of a data file no process is
// serving.
func VerifyAuditFile(ctx context.Context, path string) (AuditReport, error) {
	if _, err := os.Stat(path); err != nil {
		return AuditReport{}, fmt.Errorf("audit %s: %w", path, err)
	}
	var rep AuditReport
	err := viewFile(path, func(fv fileView) error {
		rep = fv.tx.VerifyAudit()
		return ctx.Err()
	})
	if err != nil {
		return AuditReport{}, fmt.Errorf("audit %s: %w", path, err)
	}
	return rep, nil
}
