// Package brotli replaces github.com/molecule-man/go-brrr in the synapse
// build (a replace directive in the root go.mod). fasthttp imports that
// package for brotli-compressed responses and request bodies; the agent
// neither serves compressed responses nor decodes compressed requests, yet
// the real package costs about 190 KiB of binary and, at every start,
// builds a 128 KiB table in memory. This stand-in has the API fasthttp
// uses, and every read or write through it fails with ErrNotBuilt.
package brotli

import (
	"errors"
	"io"
)

// The levels fasthttp names.
const (
	BestSpeed          = 0
	BestCompression    = 11
	DefaultCompression = 6
)

// ErrNotBuilt is the error of every read and write.
var ErrNotBuilt = errors.New("brotli is not built into synapse")

// Reader is a brotli reader that reads nothing.
type Reader struct{}

// NewReader returns a Reader whose reads fail.
func NewReader(io.Reader) *Reader { return &Reader{} }

// Read fails with ErrNotBuilt.
func (*Reader) Read([]byte) (int, error) { return 0, ErrNotBuilt }

// Reset does nothing.
func (*Reader) Reset(io.Reader) {}

// Close does nothing.
func (*Reader) Close() error { return nil }

// Writer is a brotli writer that writes nothing.
type Writer struct{}

// NewWriter returns a Writer whose writes fail.
func NewWriter(io.Writer, int) (*Writer, error) { return &Writer{}, nil }

// Write fails with ErrNotBuilt.
func (*Writer) Write([]byte) (int, error) { return 0, ErrNotBuilt }

// Flush fails with ErrNotBuilt.
func (*Writer) Flush() error { return ErrNotBuilt }

// Close does nothing.
func (*Writer) Close() error { return nil }

// Reset does nothing.
func (*Writer) Reset(io.Writer) {}
