// Package gzip replaces github.com/klauspost/compress/gzip in the synapse
// build with the standard library's compress/gzip (same format); see
// package flate of this module for why.
package gzip

import (
	"compress/gzip"
	"io"
)

// The compression levels, as compress/gzip's.
const (
	NoCompression      = gzip.NoCompression
	BestSpeed          = gzip.BestSpeed
	BestCompression    = gzip.BestCompression
	DefaultCompression = gzip.DefaultCompression
	HuffmanOnly        = gzip.HuffmanOnly
)

// The reader and writer types are compress/gzip's.
type (
	Reader = gzip.Reader
	Writer = gzip.Writer
)

// NewReader is compress/gzip's NewReader.
func NewReader(r io.Reader) (*Reader, error) { return gzip.NewReader(r) }

// NewWriterLevel is compress/gzip's NewWriterLevel.
func NewWriterLevel(w io.Writer, level int) (*Writer, error) { return gzip.NewWriterLevel(w, level) }
