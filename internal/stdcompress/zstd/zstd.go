// Package zstd replaces github.com/klauspost/compress/zstd in the synapse
// build (a replace directive in the root go.mod), as internal/nobrotli
// replaces brotli: fasthttp imports it for zstd-compressed responses and
// request bodies, which the agent neither serves nor decodes. This
// stand-in has the API fasthttp uses, and every read or write through it
// fails with ErrNotBuilt.
package zstd

import (
	"errors"
	"io"
)

// ErrNotBuilt is the error of every read and write.
var ErrNotBuilt = errors.New("zstd is not built into synapse")

// The errors fasthttp tells apart.
var (
	ErrWindowSizeExceeded  = errors.New("zstd: window size exceeded")
	ErrDecoderSizeExceeded = errors.New("zstd: decompressed size exceeds configured limit")
)

// MinWindowSize is the smallest window of the format.
const MinWindowSize = 1 << 10

// EncoderLevel is a compression level.
type EncoderLevel int

// DOption is a decoder option; the stand-in ignores them.
type DOption func(*Decoder) error

// EOption is an encoder option; the stand-in ignores them.
type EOption func(*Encoder) error

// WithDecoderMaxMemory is ignored.
func WithDecoderMaxMemory(uint64) DOption { return func(*Decoder) error { return nil } }

// WithDecoderConcurrency is ignored.
func WithDecoderConcurrency(int) DOption { return func(*Decoder) error { return nil } }

// WithEncoderLevel is ignored.
func WithEncoderLevel(EncoderLevel) EOption { return func(*Encoder) error { return nil } }

// WithWindowSize is ignored.
func WithWindowSize(int) EOption { return func(*Encoder) error { return nil } }

// Decoder is a zstd reader that reads nothing.
type Decoder struct{}

// NewReader returns a Decoder whose reads fail.
func NewReader(io.Reader, ...DOption) (*Decoder, error) { return &Decoder{}, nil }

// Reset does nothing.
func (*Decoder) Reset(io.Reader) error { return nil }

// Read fails with ErrNotBuilt.
func (*Decoder) Read([]byte) (int, error) { return 0, ErrNotBuilt }

// WriteTo fails with ErrNotBuilt.
func (*Decoder) WriteTo(io.Writer) (int64, error) { return 0, ErrNotBuilt }

// Close does nothing.
func (*Decoder) Close() {}

// Encoder is a zstd writer that writes nothing.
type Encoder struct{}

// NewWriter returns an Encoder whose writes fail.
func NewWriter(io.Writer, ...EOption) (*Encoder, error) { return &Encoder{}, nil }

// Reset does nothing.
func (*Encoder) Reset(io.Writer) {}

// Write fails with ErrNotBuilt.
func (*Encoder) Write([]byte) (int, error) { return 0, ErrNotBuilt }

// Flush fails with ErrNotBuilt.
func (*Encoder) Flush() error { return ErrNotBuilt }

// Close fails with ErrNotBuilt.
func (*Encoder) Close() error { return ErrNotBuilt }

// Header is a frame header; Decode always fails.
type Header struct {
	Skippable        bool
	SkippableSize    uint32
	HeaderSize       int
	HasFCS           bool
	FrameContentSize uint64
}

// Decode fails with ErrNotBuilt.
func (*Header) Decode([]byte) error { return ErrNotBuilt }
