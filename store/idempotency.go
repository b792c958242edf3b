package store

import (
	"bytes"
	"time"
)

// IdemRecord is the stored outcome of a request made with an idempotency key.
type IdemRecord struct {
	// RequestHash identifies the request (method, route and body) that used the key.
	RequestHash string    `json:"request_hash"`
	Status      int       `json:"status"`
	ContentType string    `json:"content_type"`
	Body        []byte    `json:"body"`
	TaskID      string    `json:"task_id,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

func idemKey(scope, key string) []byte {
	k := make([]byte, 0, len(scope)+1+len(key))
	k = append(k, scope...)
	k = append(k, 0)
	return append(k, key...)
}

// Idem reads the record of (scope, key).
func (tx *Tx) Idem(scope, key string) (*IdemRecord, error) {
	r := new(IdemRecord)
	if err := getJSON(tx.b(bucketIdem), idemKey(scope, key), r); err != nil {
		return nil, err
	}
	return r, nil
}

// PutIdem writes the record of (scope, key). A first write also indexes it for
// expiry; an overwrite keeps the original creation time.
func (tx *Tx) PutIdem(scope, key string, r *IdemRecord) error {
	k := idemKey(scope, key)
	if old := tx.b(bucketIdem).Get(k); old == nil {
		if err := tx.b(bucketIdemExp).Put(append(beTime(r.CreatedAt), k...), nil); err != nil {
			return err
		}
	}
	return putJSON(tx.b(bucketIdem), k, r)
}

// PruneIdem deletes up to max records created before cutoff.
func (tx *Tx) PruneIdem(cutoff time.Time, max int) (int, error) {
	exp := tx.b(bucketIdemExp)
	cut := beTime(cutoff)
	c := exp.Cursor()
	n := 0
	for k, _ := c.First(); k != nil && n < max && bytes.Compare(k[:8], cut) < 0; k, _ = c.First() {
		if err := tx.b(bucketIdem).Delete(k[8:]); err != nil {
			return n, err
		}
		if err := exp.Delete(k); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
