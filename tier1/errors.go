package tier1

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/synapse-edge/synapse/wire"
)

// Errors of descriptors and registries.
var (
	// ErrInvalidDescriptor: a descriptor breaks a rule of Validate.
	ErrInvalidDescriptor = errors.New("tier1: invalid descriptor")
	// ErrDuplicateRoutine: two descriptors in one registry share an id.
	ErrDuplicateRoutine = errors.New("tier1: duplicate routine")
)

// Errors of batch decoding. Every error of DecodeBatch wraps one of the
// first four, or is a [*FrameError] (which matches ErrMalformedBatch and
// wraps the reason the frame was refused).
var (
	// ErrUnknownRoutine: the batch names a capability_id the registry
	// does not hold.
	ErrUnknownRoutine = errors.New("tier1: unknown routine")
	// ErrVersionMismatch: the batch names another version of a routine
	// than the registered one.
	ErrVersionMismatch = errors.New("tier1: routine version mismatch")
	// ErrMalformedBatch: the batch is not [capability_id, version,
	// [frame, ...], batch_id?], is truncated, or has trailing bytes.
	ErrMalformedBatch = errors.New("tier1: malformed batch")
	// ErrTooManyFrames: the batch declares more frames than Limits.MaxFrames.
	ErrTooManyFrames = errors.New("tier1: too many frames")
)

// Reasons a frame is refused, wrapped in a [*FrameError]. Wrong types,
// out-of-range numbers and truncation are the msgpack reader's errors
// (wire.ErrMsgpackType, wire.ErrMsgpackRange, wire.ErrMsgpackTruncated).
var (
	// ErrMissingField: a required field is absent or nil.
	ErrMissingField = errors.New("required field missing")
	// ErrExtraValues: a frame holds more values than the routine has fields.
	ErrExtraValues = errors.New("more values than fields")
	// ErrValueTooLong: a str or bin is longer than Limits allow.
	ErrValueTooLong = errors.New("value too long")
	// ErrInvalidUTF8: a str value is not valid UTF-8. It wraps
	// wire.ErrInvalidUTF8 (TP-VAL002).
	ErrInvalidUTF8 = fmt.Errorf("str is %w", wire.ErrInvalidUTF8)
)

// FrameError reports the first bad frame of a batch; the whole batch is
// refused. Field is empty when the frame as a whole is bad (not an array,
// too many values).
type FrameError struct {
	Index int    // position of the frame in the batch, from 0
	Field string // name of the offending field, if any
	Err   error  // the reason
}

func (e *FrameError) Error() string {
	s := "frame " + strconv.Itoa(e.Index) + ": "
	if e.Field != "" {
		s += "field " + strconv.Quote(e.Field) + ": "
	}
	return s + e.Err.Error()
}

// Unwrap returns the reason.
func (e *FrameError) Unwrap() error { return e.Err }

// Is makes every FrameError match ErrMalformedBatch.
func (e *FrameError) Is(target error) bool { return target == ErrMalformedBatch }
