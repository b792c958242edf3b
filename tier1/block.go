package tier1

import (
	"fmt"

	"github.com/synapse-edge/synapse/wire"
)

// Stored blocks. An agent stores a routine's frames in blocks rather than
// one record per frame: a block holds the frames of one device from one
// store write (one batch, or the batches of a sender stored together), in
// time order, spanning at most BlockSpan nanoseconds of ts and at
// most MaxBlockFrames frames. Fields whose value is the same in every frame
// of the block (the device, usually the metric and unit) are stored once:
//
//	block  = array(3) mask consts frames
//	mask   = uint: bit i set when field i is constant in the block
//	consts = array of the constant fields' values, in field order
//	frames = array(n) of arrays of the other fields' values, in field order
//
// Values are encoded as in frames (AppendFrame); an absent optional value
// is nil. Blocks cut the records (and B-tree operations) per stored frame
// by the batch size, and the constant fields cut the bytes written, which
// is what lets durable ingest run near the speed of the disk.
const (
	// BlockSpan bounds the ts range of one block (1 s), so that a time
	// query needs to start at most this much before its lower bound.
	BlockSpan = int64(1e9)
	// MaxBlockFrames bounds the frames in one block.
	MaxBlockFrames  = 1024
	uncutBlockBytes = 16 << 10
	// MaxBlockBytes is the size of block from which a device's run is
	// cut, up to uncutBlockBytes, so that at least two blocks and their
	// keys fill a page of the data file (4 KiB, packed to 95 % in
	// tier-1's buckets): a block of 2 KiB, a hundred frames of a device,
	// filled a page alone, and one of 5 KiB took two. From
	// uncutBlockBytes a block is an overflow node of pages it fills
	// nearly whole.
	MaxBlockBytes = 1800
)

// AppendBlock encodes frames (all of one routine with len(fields) fields) as
// a block.
func AppendBlock(dst []byte, frames []Frame, nfields int) []byte {
	var mask uint64
	if len(frames) > 1 {
		for i := range nfields {
			v := frames[0].At(i)
			same := true
			for _, f := range frames[1:] {
				if !f.At(i).Equal(v) {
					same = false
					break
				}
			}
			if same {
				mask |= 1 << i
			}
		}
	}
	dst = append(dst, 0x93)
	dst = appendUint(dst, mask)
	consts := make(Frame, 0, nfields)
	for i := range nfields {
		if mask&(1<<i) != 0 {
			consts = append(consts, frames[0].At(i))
		}
	}
	dst = AppendFrame(dst, consts)
	dst = appendArrayHeader(dst, len(frames))
	vals := make(Frame, 0, nfields)
	for _, f := range frames {
		vals = vals[:0]
		for i := range nfields {
			if mask&(1<<i) == 0 {
				vals = append(vals, f.At(i))
			}
		}
		dst = AppendFrame(dst, vals)
	}
	return dst
}

// BlockReader iterates the frames of a stored block.
type BlockReader struct {
	r      wire.MsgpackReader
	vars   plan
	varD   Descriptor
	mask   uint64
	consts Frame
	nf     int
	src    string
	n, i   int
	lim    Limits
}

// NewBlockReader opens a block for reading with descriptor d. The block's
// bytes are copied once, so frames stay valid after the store transaction.
func NewBlockReader(b []byte, d *Descriptor) (*BlockReader, error) {
	br := &BlockReader{src: string(b), lim: Limits{}.withDefaults(), nf: len(d.Fields)}
	br.r.Reset([]byte(br.src), readerLimits())
	if n, err := br.r.ReadArrayHeader(); err != nil || n != 3 {
		return nil, fmt.Errorf("block: not a block (%v)", err)
	}
	mask, err := br.r.ReadUint()
	if err != nil {
		return nil, fmt.Errorf("block mask: %w", err)
	}
	br.mask = mask
	constD := Descriptor{CapabilityID: d.CapabilityID}
	br.varD = Descriptor{CapabilityID: d.CapabilityID}
	for i, f := range d.Fields {
		f.Optional = true // nil stands for an absent optional value
		if mask&(1<<i) != 0 {
			constD.Fields = append(constD.Fields, f)
		} else {
			br.varD.Fields = append(br.varD.Fields, f)
		}
	}
	var cp plan
	if err := cp.init(&constD); err != nil {
		return nil, err
	}
	if br.consts, err = cp.decode(&br.r, br.src, nil, br.lim); err != nil {
		return nil, fmt.Errorf("block constants: %w", err)
	}
	if err := br.vars.init(&br.varD); err != nil {
		return nil, err
	}
	if br.n, err = br.r.ReadArrayHeader(); err != nil {
		return nil, fmt.Errorf("block frames: %w", err)
	}
	return br, nil
}

// Len is the number of frames in the block.
func (br *BlockReader) Len() int { return br.n }

// Next returns the next frame, or nil after the last.
func (br *BlockReader) Next() (Frame, error) {
	if br.i == br.n {
		return nil, nil
	}
	vars, err := br.vars.decode(&br.r, br.src, nil, br.lim)
	if err != nil {
		return nil, fmt.Errorf("block frame %d: %w", br.i, err)
	}
	br.i++
	f := make(Frame, br.nf)
	c, v := 0, 0
	for i := range br.nf {
		if br.mask&(1<<i) != 0 {
			f[i] = Frame(br.consts).At(c)
			c++
		} else {
			f[i] = Frame(vars).At(v)
			v++
		}
	}
	for len(f) > 0 && f[len(f)-1].IsNull() {
		f = f[:len(f)-1]
	}
	return f, nil
}

// BlockLen returns the number of frames in a stored block (0 if it is not
// one).
func BlockLen(b []byte) int {
	var r wire.MsgpackReader
	r.Reset(b, wire.DefaultMsgpackLimits)
	if n, err := r.ReadArrayHeader(); err != nil || n != 3 {
		return 0
	}
	if r.Skip() != nil || r.Skip() != nil {
		return 0
	}
	n, err := r.ReadArrayHeader()
	if err != nil {
		return 0
	}
	return n
}
