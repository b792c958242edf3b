package tier1

import (
	"fmt"

	"github.com/synapse-edge/synapse/wire"
)

// Stored blocks. An agent stores a routine's frames in blocks rather than
// one record per frame: a block holds the frames of one device from one
// batch, in time order, spanning at most BlockSpan nanoseconds of ts and at
// most MaxBlockFrames frames. A block is a msgpack array of frames, each
// encoded as by AppendFrame:
//
//	block = array(n) frame_0 ... frame_n-1
//
// Blocks cut the number of records (and B-tree operations) per stored frame
// by the batch size, which is what lets durable ingest run near the speed of
// the disk's fsync rather than the speed of record inserts.
const (
	// BlockSpan bounds the ts range of one block (1 s), so that a time
	// query needs to start at most this much before its lower bound.
	BlockSpan = int64(1e9)
	// MaxBlockFrames bounds the frames in one block.
	MaxBlockFrames = 1024
)

// AppendBlockHeader starts a block of n frames; append n frames after it.
func AppendBlockHeader(dst []byte, n int) []byte { return appendArrayHeader(dst, n) }

// BlockReader iterates the frames of a stored block.
type BlockReader struct {
	r    wire.MsgpackReader
	p    plan
	src  string
	n, i int
	lim  Limits
}

// NewBlockReader opens a block for reading with descriptor d. The block's
// bytes are copied once, so frames stay valid after the store transaction.
func NewBlockReader(b []byte, d *Descriptor) (*BlockReader, error) {
	br := &BlockReader{src: string(b), lim: Limits{}.withDefaults()}
	if err := br.p.init(d); err != nil {
		return nil, err
	}
	br.r.Reset([]byte(br.src), readerLimits())
	n, err := br.r.ReadArrayHeader()
	if err != nil {
		return nil, fmt.Errorf("block: %w", err)
	}
	br.n = n
	return br, nil
}

// Len is the number of frames in the block.
func (br *BlockReader) Len() int { return br.n }

// Next returns the next frame, or nil after the last.
func (br *BlockReader) Next() (Frame, error) {
	if br.i == br.n {
		return nil, nil
	}
	f, err := br.p.decode(&br.r, br.src, make([]Value, 0, len(br.p.d.Fields)), br.lim)
	if err != nil {
		return nil, fmt.Errorf("block frame %d: %w", br.i, err)
	}
	br.i++
	return Frame(f), nil
}

// BlockLen returns the number of frames in a stored block (0 if it is not
// one).
func BlockLen(b []byte) int {
	var r wire.MsgpackReader
	r.Reset(b, readerLimits())
	n, err := r.ReadArrayHeader()
	if err != nil {
		return 0
	}
	return n
}
