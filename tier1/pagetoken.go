package tier1

import (
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"math"
	"strings"

	"github.com/synapse-edge/synapse/wire"
)

// Page tokens. A frame query (Ingestor.Frames) that stops at its limit
// gives a token to continue after the last frame it returned. Clients
// treat it as opaque; it names a position in the routine's frame order
// (the block holding the frame and the frame's index in it), not a store
// key, and it is bound to the routine. Format 1:
//
//	token  = "p1." base64url(body), without padding
//	body   = ts      varint (zigzag)  the block's ts (its first frame's, unix ns)
//	         device  uvarint length, then the bytes: the block's device
//	         seq     uvarint          the block's arrival sequence number
//	         index   uvarint          the frame's index in the block (< 2^31)
//	         check   4 bytes          CRC-32C (Castagnoli), big endian, of the
//	                                  capability_id, one 0x00 byte, and the body
//	                                  before check
//
// Nothing may follow check. A token whose check does not match (corrupt,
// cut short, or given for another routine) is refused as one this agent
// did not give. Agents before format 1 gave the base64url of a store key
// and a 16-bit index, with no "."; such a token is refused with a message
// that says to start the query again.
const (
	pageTokenPrefix = "p1."
	// maxPageToken bounds the token a decoder reads: a device of 64 KiB
	// (beyond any str a batch may carry) and the other fields fit.
	maxPageToken = len(pageTokenPrefix) + (1<<16+64)*4/3 + 4
)

// pagePos is the position a page token names.
type pagePos struct {
	ts     int64
	device string
	seq    uint64
	index  int
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// pageCheck is the check of a token body for routine capID.
func pageCheck(capID string, body []byte) uint32 {
	c := crc32.Update(0, castagnoli, []byte(capID))
	c = crc32.Update(c, castagnoli, []byte{0})
	return crc32.Update(c, castagnoli, body)
}

// encodePageToken returns the token of position p in routine capID.
func encodePageToken(capID string, p pagePos) string {
	body := make([]byte, 0, 3*binary.MaxVarintLen64+binary.MaxVarintLen32+len(p.device)+4)
	body = binary.AppendVarint(body, p.ts)
	body = binary.AppendUvarint(body, uint64(len(p.device)))
	body = append(body, p.device...)
	body = binary.AppendUvarint(body, p.seq)
	body = binary.AppendUvarint(body, uint64(p.index))
	body = binary.BigEndian.AppendUint32(body, pageCheck(capID, body))
	return pageTokenPrefix + base64.RawURLEncoding.EncodeToString(body)
}

// errPageToken is the answer to a token this agent did not give for the
// routine.
func errPageToken(capID string) error {
	return wire.Errorf(wire.CodeInvalidParams, "page_token is not one this agent gave for routine %q; "+
		"use next_page_token of the previous page as it is", capID).With("field", "page_token")
}

// decodePageToken reads a token for routine capID. It refuses (with
// invalid_params, field page_token) anything encodePageToken did not make
// for capID.
func decodePageToken(capID, tok string) (pagePos, error) {
	if len(tok) > maxPageToken {
		return pagePos{}, errPageToken(capID)
	}
	rest, ok := strings.CutPrefix(tok, pageTokenPrefix)
	if !ok {
		if !strings.Contains(tok, ".") {
			if raw, err := base64.RawURLEncoding.DecodeString(tok); err == nil && len(raw) >= 19 {
				return pagePos{}, wire.Errorf(wire.CodeInvalidParams, "page_token is in the format of an older version "+
					"of this agent, which is no longer read; run the query again from its first page, without page_token").
					With("field", "page_token")
			}
		}
		return pagePos{}, errPageToken(capID)
	}
	body, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || len(body) < 4 {
		return pagePos{}, errPageToken(capID)
	}
	fields, check := body[:len(body)-4], binary.BigEndian.Uint32(body[len(body)-4:])
	if pageCheck(capID, fields) != check {
		return pagePos{}, errPageToken(capID)
	}
	var p pagePos
	b := fields
	var n int
	if p.ts, n = binary.Varint(b); n <= 0 {
		return pagePos{}, errPageToken(capID)
	}
	b = b[n:]
	devLen, n := binary.Uvarint(b)
	if n <= 0 || devLen > uint64(len(b)-n) {
		return pagePos{}, errPageToken(capID)
	}
	b = b[n:]
	p.device, b = string(b[:devLen]), b[devLen:]
	if p.seq, n = binary.Uvarint(b); n <= 0 {
		return pagePos{}, errPageToken(capID)
	}
	b = b[n:]
	index, n := binary.Uvarint(b)
	if n <= 0 || index > math.MaxInt32 || n != len(b) {
		return pagePos{}, errPageToken(capID)
	}
	p.index = int(index)
	return p, nil
}
