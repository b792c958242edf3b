// Package zlib replaces github.com/klauspost/compress/zlib in the synapse
// build with the standard library's compress/zlib (same format); see
// package flate of this module for why.
package zlib

import (
	"compress/zlib"
	"io"
)

// The compression levels, as compress/zlib's.
const (
	NoCompression      = zlib.NoCompression
	BestSpeed          = zlib.BestSpeed
	BestCompression    = zlib.BestCompression
	DefaultCompression = zlib.DefaultCompression
	HuffmanOnly        = zlib.HuffmanOnly
)

// The reader and writer types are compress/zlib's.
type (
	Writer   = zlib.Writer
	Resetter = zlib.Resetter
)

// NewReader is compress/zlib's NewReader.
func NewReader(r io.Reader) (io.ReadCloser, error) { return zlib.NewReader(r) }

// NewWriterLevel is compress/zlib's NewWriterLevel.
func NewWriterLevel(w io.Writer, level int) (*Writer, error) { return zlib.NewWriterLevel(w, level) }
