package tier1

import (
	"fmt"
	"math"
	"math/bits"

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
// An integer field that changes from frame to frame (a sequence number, a
// timestamp) mostly changes by little: a block in which one is cheaper to
// store by its steps is written in the second form (schema 9; an older
// binary refuses the file):
//
//	block  = array(6) mask consts dmask smask steps frames
//	dmask  = uint: bit i set when field i is stored in frames as its
//	         difference from the previous frame's value (from 0 in the
//	         first frame)
//	smask  = uint: bit i set when field i goes up by the same step in every
//	         frame: it is not in frames, and steps holds its first value
//	         and its step
//	steps  = array of two ints per field of smask, in field order
//
// Both are for int and uint fields that are in every frame (none null);
// differences are 64-bit and wrap, so that every value, an uint's above
// the int64 range too, comes back exactly. Values are encoded as in frames
// (AppendFrame); an absent optional value is nil. Blocks cut the records
// (and B-tree operations) per stored frame by the batch size, and the
// constant fields and steps cut the bytes written, which is what lets
// durable ingest run near the speed of the disk: a telemetry frame's seq
// (up by one) takes nothing and its ts a few bytes.
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
	var mask, dmask, smask uint64
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
			switch {
			case same:
				mask |= 1 << i
			default:
				switch stepped(frames, i) {
				case byStep:
					smask |= 1 << i
				case byDifference:
					dmask |= 1 << i
				}
			}
		}
	}
	if dmask|smask == 0 {
		dst = append(dst, 0x93)
		dst = appendUint(dst, mask)
	} else {
		dst = append(dst, 0x96)
		dst = appendUint(dst, mask)
	}
	// The constants and each frame's other values, on the stack for up
	// to eight fields.
	var cbuf, vbuf [8]Value
	consts, vals := Frame(cbuf[:0]), Frame(vbuf[:0])
	if nfields > len(cbuf) {
		consts, vals = make(Frame, 0, nfields), make(Frame, 0, nfields)
	}
	for i := range nfields {
		if mask&(1<<i) != 0 {
			consts = append(consts, frames[0].At(i))
		}
	}
	dst = AppendFrame(dst, consts)
	if dmask|smask != 0 {
		dst = appendUint(dst, dmask)
		dst = appendUint(dst, smask)
		dst = appendArrayHeader(dst, 2*bits.OnesCount64(smask))
		for i := range nfields {
			if smask&(1<<i) != 0 {
				first := frames[0].At(i).n
				dst = appendInt(dst, int64(first))
				dst = appendInt(dst, int64(frames[1].At(i).n-first))
			}
		}
	}
	dst = appendArrayHeader(dst, len(frames))
	var prev [MaxFields]uint64
	for _, f := range frames {
		vals = vals[:0]
		for i := range nfields {
			bit := uint64(1) << i
			switch {
			case (mask|smask)&bit != 0:
			case dmask&bit != 0:
				n := f.At(i).n
				vals = append(vals, Int(int64(n-prev[i])))
				prev[i] = n
			default:
				vals = append(vals, f.At(i))
			}
		}
		dst = AppendFrame(dst, vals)
	}
	return dst
}

// How stepped finds a column best stored.
const (
	asValues = iota
	byDifference
	byStep
)

// stepped tells how field i of frames (more than one) is best stored: by
// its step, when it is an int or uint in every frame that goes up by the
// same amount each time; by its differences, when they take fewer bytes
// than its values; else as values.
func stepped(frames []Frame, i int) int {
	k := frames[0].At(i).Kind()
	if k != KindInt && k != KindUint {
		return asValues
	}
	step := frames[1].At(i).n - frames[0].At(i).n
	even := true
	plain, diffs := 0, 0
	var prev uint64
	for j, f := range frames {
		v := f.At(i)
		if v.Kind() != k {
			return asValues
		}
		if j > 0 && v.n-prev != step {
			even = false
		}
		if k == KindUint {
			plain += uintLen(v.n)
		} else {
			plain += intLen(int64(v.n))
		}
		diffs += intLen(int64(v.n - prev))
		prev = v.n
	}
	switch {
	case even:
		return byStep
	case diffs < plain:
		return byDifference
	}
	return asValues
}

// uintLen and intLen are the sizes of appendUint's and appendInt's
// encodings.
func uintLen(u uint64) int {
	switch {
	case u <= 0x7f:
		return 1
	case u <= math.MaxUint8:
		return 2
	case u <= math.MaxUint16:
		return 3
	case u <= math.MaxUint32:
		return 5
	}
	return 9
}

func intLen(i int64) int {
	switch {
	case i >= 0:
		return uintLen(uint64(i))
	case i >= -32:
		return 1
	case i >= math.MinInt8:
		return 2
	case i >= math.MinInt16:
		return 3
	case i >= math.MinInt32:
		return 5
	}
	return 9
}

// BlockReader iterates the frames of a stored block.
type BlockReader struct {
	r      wire.MsgpackReader
	vars   plan
	varD   Descriptor
	mask   uint64
	dmask  uint64
	smask  uint64
	consts Frame
	kinds  [MaxFields]Kind
	acc    [MaxFields]uint64 // a dmask field's last value, an smask field's next
	steps  [MaxFields]uint64 // an smask field's step
	nf     int
	src    string
	n, i   int
	lim    Limits
}

// NewBlockReader opens a block for reading with descriptor d. The block's
// bytes are copied once, so frames stay valid after the store transaction.
func NewBlockReader(b []byte, d *Descriptor) (*BlockReader, error) {
	br := &BlockReader{src: string(b), lim: Limits{}.withDefaults(), nf: len(d.Fields)}
	if br.nf > MaxFields {
		return nil, fmt.Errorf("%w: %s: %d fields, limit %d", ErrInvalidDescriptor, d.CapabilityID, br.nf, MaxFields)
	}
	br.r.Reset([]byte(br.src), readerLimits())
	form, err := br.r.ReadArrayHeader()
	if err != nil || form != 3 && form != 6 {
		return nil, fmt.Errorf("block: not a block (%v)", err)
	}
	if br.mask, err = br.r.ReadUint(); err != nil {
		return nil, fmt.Errorf("block mask: %w", err)
	}
	constD := Descriptor{CapabilityID: d.CapabilityID}
	for i, f := range d.Fields {
		br.kinds[i] = f.Type.kind()
		if br.mask&(1<<i) != 0 {
			f.Optional = true // nil stands for an absent optional value
			constD.Fields = append(constD.Fields, f)
		}
	}
	var cp plan
	if err := cp.init(&constD); err != nil {
		return nil, err
	}
	if br.consts, err = cp.decode(&br.r, br.src, nil, br.lim); err != nil {
		return nil, fmt.Errorf("block constants: %w", err)
	}
	if form == 6 {
		if err := br.readSteps(); err != nil {
			return nil, err
		}
	}
	br.varD = Descriptor{CapabilityID: d.CapabilityID}
	for i, f := range d.Fields {
		switch bit := uint64(1) << i; {
		case (br.mask|br.smask)&bit != 0:
			continue
		case br.dmask&bit != 0:
			f.Type, f.Optional = TypeInt, false
		default:
			f.Optional = true
		}
		br.varD.Fields = append(br.varD.Fields, f)
	}
	if err := br.vars.init(&br.varD); err != nil {
		return nil, err
	}
	if br.n, err = br.r.ReadArrayHeader(); err != nil {
		return nil, fmt.Errorf("block frames: %w", err)
	}
	return br, nil
}

// readSteps reads the second form's dmask, smask and steps.
func (br *BlockReader) readSteps() error {
	var err error
	if br.dmask, err = br.r.ReadUint(); err != nil {
		return fmt.Errorf("block dmask: %w", err)
	}
	if br.smask, err = br.r.ReadUint(); err != nil {
		return fmt.Errorf("block smask: %w", err)
	}
	all := uint64(1)<<br.nf - 1
	if br.nf == 64 {
		all = ^uint64(0)
	}
	if br.dmask&br.smask != 0 || (br.dmask|br.smask)&(br.mask|^all) != 0 {
		return fmt.Errorf("block: masks %#x, %#x and %#x of %d fields overlap or overrun: %w", br.mask, br.dmask, br.smask, br.nf, wire.ErrMsgpackInvalid)
	}
	for i := range br.nf {
		if (br.dmask|br.smask)&(1<<i) != 0 && br.kinds[i] != KindInt && br.kinds[i] != KindUint {
			return fmt.Errorf("block: field %d, a %s, stored by difference: %w", i, br.kinds[i], wire.ErrMsgpackInvalid)
		}
	}
	n, err := br.r.ReadArrayHeader()
	if err != nil {
		return fmt.Errorf("block steps: %w", err)
	}
	if n != 2*bits.OnesCount64(br.smask) {
		return fmt.Errorf("block steps: %d values for %d stepped fields: %w", n, bits.OnesCount64(br.smask), wire.ErrMsgpackInvalid)
	}
	for i := range br.nf {
		if br.smask&(1<<i) == 0 {
			continue
		}
		first, err := br.r.ReadInt()
		if err != nil {
			return fmt.Errorf("block steps: %w", err)
		}
		step, err := br.r.ReadInt()
		if err != nil {
			return fmt.Errorf("block steps: %w", err)
		}
		br.acc[i], br.steps[i] = uint64(first), uint64(step)
	}
	return nil
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
		switch bit := uint64(1) << i; {
		case br.mask&bit != 0:
			f[i] = Frame(br.consts).At(c)
			c++
		case br.smask&bit != 0:
			f[i] = Value{kind: br.kinds[i], n: br.acc[i]}
			br.acc[i] += br.steps[i]
		case br.dmask&bit != 0:
			br.acc[i] += Frame(vars).At(v).n
			f[i] = Value{kind: br.kinds[i], n: br.acc[i]}
			v++
		default:
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
	form, err := r.ReadArrayHeader()
	if err != nil || form != 3 && form != 6 {
		return 0
	}
	for range form - 1 {
		if r.Skip() != nil {
			return 0
		}
	}
	n, err := r.ReadArrayHeader()
	if err != nil {
		return 0
	}
	return n
}
