package store

import "bytes"

// checkT1Seen verifies the tier-1 batch-id table (t1_seen_g): every key is
// a scope, a 0x00 and the part of a batch id before its last byte, and
// every value a mark time and a set with at least one id in it. A record
// that fails is read as "nothing seen" by T1Dedup, so a batch sent again
// would be stored twice: the check names it.
func checkT1Seen(tx *Tx, add func(format string, args ...any)) {
	b := tx.root(bucketT1SeenG)
	if b == nil {
		return
	}
	_ = b.ForEach(func(k, v []byte) error {
		switch {
		case bytes.IndexByte(k, 0) < 0:
			add("tier-1 batch-id group %q: the key has no scope separator", k)
		case len(v) != t1SeenValueLen:
			add("tier-1 batch-id group %q: %d bytes, want %d", k, len(v), t1SeenValueLen)
		case bytes.Count(v[8:], []byte{0}) == len(v)-8:
			add("tier-1 batch-id group %q: no id in the set", k)
		}
		return nil
	})
}
