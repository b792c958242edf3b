package store

import "encoding/binary"

// Meta reads a value of the meta bucket (nil if absent). The slice is
// copied, so it stays valid after the transaction.
func (tx *Tx) Meta(key string) []byte {
	v := tx.b(bucketMeta).Get([]byte(key))
	if v == nil {
		return nil
	}
	return append([]byte(nil), v...)
}

// PutMeta writes a value of the meta bucket.
func (tx *Tx) PutMeta(key string, value []byte) error {
	return tx.b(bucketMeta).Put([]byte(key), value)
}

// SchemaVersion is the version recorded in the file.
func (tx *Tx) SchemaVersion() int {
	v := tx.b(bucketMeta).Get(keySchema)
	if len(v) != 4 {
		return 0
	}
	return int(binary.BigEndian.Uint32(v))
}
