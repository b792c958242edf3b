package wire

import "encoding/binary"

// Tier1Ack answers one tier-1 batch (SPEC §8), over HTTP (POST
// /tier1/batch, in the request's codec) and as one binary WebSocket
// message per batch of a /tier1/stream connection (msgpack).
type Tier1Ack struct {
	OK        bool   `json:"ok" msgpack:"ok"`
	Accepted  int    `json:"accepted" msgpack:"accepted"`
	BatchID   string `json:"batch_id,omitempty" msgpack:"batch_id,omitempty"`
	Duplicate bool   `json:"duplicate,omitempty" msgpack:"duplicate,omitempty"`
	Error     *Error `json:"error,omitempty" msgpack:"error,omitempty"`
}

// AppendMsgpack appends a's msgpack encoding, the bytes Msgpack.Marshal
// makes of it: a map of ok, accepted, then batch_id and duplicate when
// set, ints in their smallest format. An answer without an error, the
// stream's every acknowledgement, is written here without reflection or
// allocation; one with an error goes through the codec.
func (a *Tier1Ack) AppendMsgpack(dst []byte) []byte {
	if a.Error != nil {
		b, err := Msgpack.Marshal(a)
		if err != nil { // a Tier1Ack always encodes; answer something valid anyway
			b, _ = Msgpack.Marshal(&Tier1Ack{Error: Errorf(CodeInternal, "encode answer: %v", err)})
		}
		return append(dst, b...)
	}
	n := byte(2)
	if a.BatchID != "" {
		n++
	}
	if a.Duplicate {
		n++
	}
	dst = append(dst, 0x80|n, 0xa2, 'o', 'k', 0xc2)
	if a.OK {
		dst[len(dst)-1] = 0xc3
	}
	dst = append(dst, 0xa8, 'a', 'c', 'c', 'e', 'p', 't', 'e', 'd')
	dst = appendMsgpackInt(dst, int64(a.Accepted))
	if a.BatchID != "" {
		dst = append(dst, 0xa8, 'b', 'a', 't', 'c', 'h', '_', 'i', 'd')
		dst = appendMsgpackStr(dst, a.BatchID)
	}
	if a.Duplicate {
		dst = append(dst, 0xa9, 'd', 'u', 'p', 'l', 'i', 'c', 'a', 't', 'e', 0xc3)
	}
	return dst
}

// AppendWSBinary appends payload as one final, unmasked binary WebSocket
// frame, as a server sends it (RFC 6455 §5.2): FIN and opcode 2, then the
// payload's length in 7 bits, or 126 and 16 bits, or 127 and 64 bits.
// The stream writes many answers in one write this way; a WebSocket
// library writes a frame per call.
func AppendWSBinary(dst, payload []byte) []byte {
	dst = append(dst, 0x82)
	switch n := len(payload); {
	case n < 126:
		dst = append(dst, byte(n))
	case n <= 0xffff:
		dst = append(dst, 126, byte(n>>8), byte(n))
	default:
		dst = append(dst, 127)
		dst = binary.BigEndian.AppendUint64(dst, uint64(n))
	}
	return append(dst, payload...)
}

// appendMsgpackInt appends i in its smallest msgpack format.
func appendMsgpackInt(dst []byte, i int64) []byte {
	switch {
	case i >= 0 && i < 128:
		return append(dst, byte(i))
	case i >= 0 && i <= 0xff:
		return append(dst, 0xcc, byte(i))
	case i >= 0 && i <= 0xffff:
		return append(dst, 0xcd, byte(i>>8), byte(i))
	case i >= 0 && i <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(dst, 0xce), uint32(i))
	case i >= 0:
		return binary.BigEndian.AppendUint64(append(dst, 0xcf), uint64(i))
	case i >= -32:
		return append(dst, byte(i))
	case i >= -128:
		return append(dst, 0xd0, byte(i))
	case i >= -32768:
		return append(dst, 0xd1, byte(i>>8), byte(i))
	case i >= -2147483648:
		return binary.BigEndian.AppendUint32(append(dst, 0xd2), uint32(i))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xd3), uint64(i))
}

// appendMsgpackStr appends s with the smallest str header.
func appendMsgpackStr(dst []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		dst = append(dst, 0xa0|byte(n))
	case n <= 0xff:
		dst = append(dst, 0xd9, byte(n))
	case n <= 0xffff:
		dst = append(dst, 0xda, byte(n>>8), byte(n))
	default:
		dst = binary.BigEndian.AppendUint32(append(dst, 0xdb), uint32(n))
	}
	return append(dst, s...)
}
