package bodycodec

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// The codings.
const (
	Identity = "identity"
	Gzip     = "gzip"
	Deflate  = "deflate"
)

// Accepted is the Accept-Encoding value an upstream that decodes both
// codings announces (in every answer of its tier-1 ingest route).
const Accepted = "gzip, deflate"

// Level is the compression level the exporter uses: flate.BestSpeed
// compresses telemetry batches within a few percent of the default level
// at a fraction of its CPU (bench/README.md, "Export compression"), which
// is what a small ARM gateway on a metered line wants.
const Level = flate.BestSpeed

// Errors of Decode; each wraps one of these.
var (
	ErrTooLarge    = errors.New("inflates past the limit")
	ErrCorrupt     = errors.New("not a valid compressed stream")
	ErrUnsupported = errors.New("unsupported content coding")
)

// Known reports whether coding (a Content-Encoding value) is one Decode
// takes: "", identity, gzip (or x-gzip) or deflate.
func Known(coding string) bool {
	switch normal(coding) {
	case "", Identity, Gzip, Deflate:
		return true
	}
	return false
}

func normal(coding string) string {
	c := strings.ToLower(strings.TrimSpace(coding))
	if c == "x-gzip" {
		return Gzip
	}
	return c
}

// Decode is body decoded from coding ("" or identity: body itself),
// at most limit bytes.
func Decode(coding string, body []byte, limit int) ([]byte, error) {
	var r io.Reader
	br := bytes.NewReader(body)
	switch c := normal(coding); c {
	case "", Identity:
		if len(body) > limit {
			return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(body), limit)
		}
		return body, nil
	case Gzip:
		zr := gzipReaders.Get().(*gzip.Reader)
		defer gzipReaders.Put(zr)
		if err := zr.Reset(br); err != nil {
			return nil, corrupt(c, err)
		}
		r = zr
	case Deflate:
		zr, err := zlib.NewReader(br)
		if err != nil {
			return nil, corrupt(c, err)
		}
		r = zr
	default:
		return nil, fmt.Errorf("%w %q: send gzip, deflate or identity", ErrUnsupported, coding)
	}
	out, err := readUpTo(r, limit+1, min(limit+1, max(512, 8*len(body))))
	switch {
	case len(out) > limit:
		return nil, fmt.Errorf("%w of %d bytes (%d compressed bytes read so far)", ErrTooLarge, limit, len(body)-br.Len())
	case err != nil:
		return nil, corrupt(normal(coding), err)
	case br.Len() > 0: // gzip reads member after member to the end; zlib stops after one
		return nil, fmt.Errorf("%w: %d bytes after the %s stream", ErrCorrupt, br.Len(), normal(coding))
	}
	return out, nil
}

// readUpTo reads r to its end or n bytes, whichever comes first, into a
// buffer of first bytes that doubles as it fills, never past n: refusing
// a bomb costs at most about 2n bytes.
func readUpTo(r io.Reader, n, first int) ([]byte, error) {
	buf := make([]byte, 0, first)
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = append(make([]byte, 0, min(n, 2*cap(buf))), buf...)
		}
		m, err := r.Read(buf[len(buf):min(cap(buf), n)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

func corrupt(coding string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: the %s stream ends early (truncated)", ErrCorrupt, coding)
	}
	return fmt.Errorf("%w: %v", ErrCorrupt, err)
}

var gzipReaders = sync.Pool{New: func() any { return new(gzip.Reader) }}

// Pick is the coding to send with, given what the upstream announced
// (an Accept-Encoding value; "" when it said nothing) and the export's
// choice (auto, gzip or deflate; off is handled by the caller): auto
// takes gzip, else deflate, when announced, and identity when not; a
// named coding is sent when announced, else identity. Codings with q=0
// are not taken.
func Pick(announced, want string) string {
	ok := map[string]bool{}
	for part := range strings.SplitSeq(announced, ",") {
		name, params, _ := strings.Cut(part, ";")
		if v, isQ := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q="); isQ {
			if q, err := strconv.ParseFloat(v, 64); err != nil || q <= 0 {
				continue
			}
		}
		switch n := normal(name); n {
		case "*":
			ok[Gzip], ok[Deflate] = true, true
		default:
			ok[n] = true
		}
	}
	switch want {
	case Gzip, Deflate:
		if ok[want] {
			return want
		}
	case "auto", "":
		if ok[Gzip] {
			return Gzip
		}
		if ok[Deflate] {
			return Deflate
		}
	}
	return Identity
}

// Encoder compresses batches; safe for concurrent use.
type Encoder struct {
	gz, zl sync.Pool
}

// Encode appends body in coding (gzip or deflate) to dst.
func (e *Encoder) Encode(dst []byte, coding string, body []byte) ([]byte, error) {
	b := bytes.NewBuffer(dst)
	switch coding {
	case Gzip:
		w, _ := e.gz.Get().(*gzip.Writer)
		if w == nil {
			w, _ = gzip.NewWriterLevel(b, Level)
		} else {
			w.Reset(b)
		}
		defer e.gz.Put(w)
		if _, err := w.Write(body); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
	case Deflate:
		w, _ := e.zl.Get().(*zlib.Writer)
		if w == nil {
			w, _ = zlib.NewWriterLevel(b, Level)
		} else {
			w.Reset(b)
		}
		defer e.zl.Put(w)
		if _, err := w.Write(body); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w %q", ErrUnsupported, coding)
	}
	return b.Bytes(), nil
}
