package store

import "encoding/binary"

// T1KeySeq is the arrival sequence part of a frame key (0 if k is not one).
// With T1KeyTime and T1KeyDevice it gives back what T1Key was built from.
func T1KeySeq(k []byte) uint64 {
	if len(k) < 17 {
		return 0
	}
	return binary.BigEndian.Uint64(k[len(k)-8:])
}
