package tier1

import (
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/synapse-edge/synapse/wire"
)

// Default limits of the decoder; see [Limits].
const (
	DefaultMaxFrames = 100_000
	DefaultMaxStrLen = 4096
	DefaultMaxBinLen = 64 << 10
)

// Limits bounds what DecodeBatch accepts. A zero field means its default.
type Limits struct {
	MaxFrames int // frames per batch; default 100,000
	MaxStrLen int // bytes per str value and batch_id; default 4096
	MaxBinLen int // bytes per bin value; default 64 KiB
}

func (l Limits) withDefaults() Limits {
	if l.MaxFrames <= 0 {
		l.MaxFrames = DefaultMaxFrames
	}
	if l.MaxStrLen <= 0 {
		l.MaxStrLen = DefaultMaxStrLen
	}
	if l.MaxBinLen <= 0 {
		l.MaxBinLen = DefaultMaxBinLen
	}
	return l
}

// readerLimits leaves container lengths to the checks against the
// remaining bytes and to the decoder's own limits; the decoder enters no
// container the reader would have to count.
func readerLimits() wire.MsgpackLimits {
	return wire.MsgpackLimits{MaxDepth: 1, MaxLen: math.MaxInt32}
}

// Batch is a decoded batch. Its strings share one copy of the input, made
// by DecodeBatch; nothing in it aliases the caller's buffer.
type Batch struct {
	CapabilityID string
	Version      string
	BatchID      string      // empty when the batch has none
	Desc         *Descriptor // the routine, from the registry
	Frames       []Frame
}

// DecodeBatch decodes one batch, refusing it whole on the first problem.
// See the package documentation for the format, the limits and the errors.
func DecodeBatch(b []byte, reg *Registry, lim Limits) (*Batch, error) {
	batch := new(Batch)
	if err := decodeBatch(b, string(b), reg, lim, batch, nil, nil); err != nil {
		return nil, err
	}
	return batch, nil
}

// decodeBatch is DecodeBatch into batch, with its frames and values in
// fbuf and vbuf when they are large enough (a small batch then costs one
// allocation less each). src holds the bytes of b, unchanged as long as
// batch is used: its strings are substrings of src.
func decodeBatch(b []byte, src string, reg *Registry, lim Limits, batch *Batch, fbuf []Frame, vbuf []Value) error {
	lim = lim.withDefaults()
	var r wire.MsgpackReader
	r.Reset(b, readerLimits())

	n, err := r.ReadArrayHeader()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrMalformedBatch, err)
	}
	if n != 3 && n != 4 {
		return fmt.Errorf("%w: %d elements, want 3 or 4", ErrMalformedBatch, n)
	}
	id, err := r.ReadStringBytes()
	if err != nil {
		return fmt.Errorf("%w: capability_id: %w", ErrMalformedBatch, err)
	}
	rt, ok := reg.lookup(id)
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownRoutine, id)
	}
	d := rt.d
	version, err := r.ReadStringBytes()
	if err != nil {
		return fmt.Errorf("%w: version: %w", ErrMalformedBatch, err)
	}
	if string(version) != d.Version {
		return fmt.Errorf("%w: %s %q, this agent has %q", ErrVersionMismatch, d.CapabilityID, version, d.Version)
	}
	nf, err := r.ReadArrayHeader()
	if err != nil {
		return fmt.Errorf("%w: frames: %w", ErrMalformedBatch, err)
	}
	if nf > lim.MaxFrames {
		return fmt.Errorf("%w: %d frames, limit %d", ErrTooManyFrames, nf, lim.MaxFrames)
	}
	p := &rt.plan
	if !rt.ok {
		p = new(plan)
		if err := p.init(d); err != nil {
			return err
		}
	}
	// A frame takes at least its header and one byte per required value.
	if least := uint64(nf) * uint64(1+p.required); least > uint64(r.Remaining()) {
		return fmt.Errorf("%w: %d frames need at least %d bytes, %d remain: %w",
			ErrMalformedBatch, nf, least, r.Remaining(), wire.ErrMsgpackTruncated)
	}

	// One copy of the input (src) backs every string of the batch, and one
	// array every value: each value takes at least one input byte, so
	// neither can be made larger than the input by a hostile header.
	frames := fbuf[:0:len(fbuf)]
	if nf <= cap(frames) {
		frames = frames[:nf]
	} else {
		frames = make([]Frame, nf)
	}
	vals := vbuf[:0:len(vbuf)]
	if need := min(nf*len(d.Fields), r.Remaining()); need > cap(vals) {
		vals = make([]Value, 0, need)
	}
	for i := range frames {
		start := len(vals)
		if vals, err = p.decode(&r, src, vals, lim); err != nil {
			if fe, ok := err.(*FrameError); ok {
				fe.Index = i
			}
			return err
		}
		frames[i] = vals[start:len(vals):len(vals)]
	}

	*batch = Batch{CapabilityID: d.CapabilityID, Version: d.Version, Desc: d, Frames: frames}
	if n == 4 && !r.ReadNil() {
		bid, err := r.ReadStringBytes()
		switch {
		case err != nil:
			return fmt.Errorf("%w: batch_id: %w", ErrMalformedBatch, err)
		case len(bid) > lim.MaxStrLen:
			return fmt.Errorf("%w: batch_id: %w: %d bytes, limit %d", ErrMalformedBatch, ErrValueTooLong, len(bid), lim.MaxStrLen)
		case !utf8.Valid(bid):
			return fmt.Errorf("%w: batch_id: %w", ErrMalformedBatch, ErrInvalidUTF8)
		}
		batch.BatchID = src[r.Offset()-len(bid) : r.Offset()]
	}
	if r.Remaining() != 0 {
		return fmt.Errorf("%w: %d bytes after the batch: %w", ErrMalformedBatch, r.Remaining(), wire.ErrMsgpackInvalid)
	}
	return nil
}

// DecodeFrame decodes one frame of d as written by [AppendFrame], with the
// default limits. It reports problems as a *FrameError with Index 0. The
// frame's strings share one copy of b.
func DecodeFrame(b []byte, d *Descriptor) (Frame, error) {
	var r wire.MsgpackReader
	r.Reset(b, readerLimits())
	var p plan
	if err := p.init(d); err != nil {
		return nil, err
	}
	f, err := p.decode(&r, string(b), make([]Value, 0, len(d.Fields)), Limits{}.withDefaults())
	if err != nil {
		return nil, err
	}
	if r.Remaining() != 0 {
		return nil, &FrameError{Err: fmt.Errorf("%d bytes after the frame: %w", r.Remaining(), wire.ErrMsgpackInvalid)}
	}
	return Frame(f), nil
}

// plan is a descriptor laid out for the decode loop.
type plan struct {
	d        *Descriptor
	kinds    [MaxFields]Kind
	optional [MaxFields]bool
	required int // values a frame must hold at least
}

// init lays out d; it checks only what the decode loop relies on, since
// registry descriptors are validated already.
func (p *plan) init(d *Descriptor) error {
	if len(d.Fields) > MaxFields {
		return fmt.Errorf("%w: %s: %d fields, limit %d", ErrInvalidDescriptor, d.CapabilityID, len(d.Fields), MaxFields)
	}
	p.d = d
	for i, f := range d.Fields {
		if p.kinds[i] = f.Type.kind(); p.kinds[i] == KindNull {
			return fmt.Errorf("%w: %s: fields[%d].type: unknown type %q", ErrInvalidDescriptor, d.CapabilityID, i, f.Type)
		}
		p.optional[i] = f.Optional
	}
	p.required = d.required()
	return nil
}

// decode reads one frame and appends its values to vals, leaving out
// trailing nulls. src is the input as a string, so that str and bin values
// are substrings of it.
func (p *plan) decode(r *wire.MsgpackReader, src string, vals []Value, lim Limits) ([]Value, error) {
	n, err := r.ReadArrayHeader()
	if err != nil {
		return vals, &FrameError{Err: err}
	}
	fields := p.d.Fields
	if n > len(fields) {
		return vals, &FrameError{Err: fmt.Errorf("%w: %d values, %d fields", ErrExtraValues, n, len(fields))}
	}
	if n < p.required {
		for i := n; i < len(fields); i++ {
			if !p.optional[i] {
				return vals, &FrameError{Field: fields[i].Name, Err: ErrMissingField}
			}
		}
	}
	start := len(vals)
	for i := range n {
		var v Value
		if r.ReadNil() {
			if !p.optional[i] {
				return vals, &FrameError{Field: fields[i].Name, Err: ErrMissingField}
			}
			vals = append(vals, v)
			continue
		}
		switch v.kind = p.kinds[i]; v.kind {
		case KindInt:
			var x int64
			x, err = r.ReadInt()
			v.n = uint64(x)
		case KindUint:
			v.n, err = r.ReadUint()
		case KindFloat:
			var x float64
			x, err = r.ReadFloat()
			v.n = math.Float64bits(x)
		case KindBool:
			var x bool
			x, err = r.ReadBool()
			if x {
				v.n = 1
			}
		case KindStr, KindBin:
			v.s, err = readText(r, src, v.kind, lim)
		}
		if err != nil {
			return vals, &FrameError{Field: fields[i].Name, Err: err}
		}
		vals = append(vals, v)
	}
	// Trailing nulls and absent trailing optionals read the same: keep the
	// shorter form.
	end := len(vals)
	for end > start && vals[end-1].kind == KindNull {
		end--
	}
	return vals[:end], nil
}

// readText reads a str or bin value (either encoding is accepted for
// either type; a str must be valid UTF-8) as a substring of src.
func readText(r *wire.MsgpackReader, src string, k Kind, lim Limits) (string, error) {
	var b []byte
	var err error
	switch r.PeekKind() {
	case wire.MsgpackStr:
		b, err = r.ReadStringBytes()
	case wire.MsgpackBin:
		b, err = r.ReadBytes()
	default: // a type error that names the field's own type
		if k == KindBin {
			_, err = r.ReadBytes()
		} else {
			_, err = r.ReadStringBytes()
		}
	}
	if err != nil {
		return "", err
	}
	limit := lim.MaxStrLen
	if k == KindBin {
		limit = lim.MaxBinLen
	}
	if len(b) > limit {
		return "", fmt.Errorf("%w: %d bytes, limit %d", ErrValueTooLong, len(b), limit)
	}
	if k == KindStr && !utf8.Valid(b) {
		return "", ErrInvalidUTF8
	}
	end := r.Offset()
	return src[end-len(b) : end], nil
}
