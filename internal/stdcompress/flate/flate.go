// Package flate replaces github.com/klauspost/compress/flate in the synapse
// build (a replace directive in the root go.mod) with the standard
// library's compress/flate: the same format, the API fasthttp and
// fasthttp/websocket use. The agent compresses nothing on the hot path
// (its console files are embedded compressed, its WebSocket offers no
// compression), and the standard library's flate is linked anyway
// (net/http, gorilla/websocket), so klauspost's encoders only cost binary
// size: about 190 KiB on arm64 (issue 13).
package flate

import (
	"compress/flate"
	"io"
)

// The compression levels, as compress/flate's.
const (
	NoCompression      = flate.NoCompression
	BestSpeed          = flate.BestSpeed
	BestCompression    = flate.BestCompression
	DefaultCompression = flate.DefaultCompression
	HuffmanOnly        = flate.HuffmanOnly
)

// Writer and Resetter are compress/flate's.
type (
	Writer   = flate.Writer
	Resetter = flate.Resetter
)

// NewWriter is compress/flate's NewWriter.
func NewWriter(w io.Writer, level int) (*Writer, error) { return flate.NewWriter(w, level) }

// NewReader is compress/flate's NewReader.
func NewReader(r io.Reader) io.ReadCloser { return flate.NewReader(r) }
