package httpapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io"
	"io/fs"
	"path"
	"strings"
	"sync"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/wire"
)

// The web console: static files compiled into the binary, served at / and
// /console/* without auth. The page asks for a token and sends it as a
// bearer token with every API call; nothing here needs one.
//
// The files are embedded gzipped (console/NAME.gz, written by
// gen_console.go from console/NAME) and sent as they are, with
// Content-Encoding: gzip, to clients that accept it; others get them
// inflated once on first use.

//go:generate go run gen_console.go

//go:embed console/*.gz
var consoleFiles embed.FS

const consolePrefix = "/console/"

// consoleCSP allows only the console's own script, style and API calls:
// no inline script or style, no framing, no form posts.
const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// consoleTypes are the content types of the console's files (fixed here
// rather than taken from the system's MIME table).
var consoleTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// asset is one console file ready to serve.
type asset struct {
	gz          []byte
	raw         func() []byte // inflated on first use
	contentType string
	etag        string // of the gzipped form; the inflated one adds -id
}

// consoleAssets reads the embedded files once.
var consoleAssets = sync.OnceValue(func() map[string]asset {
	out := map[string]asset{}
	_ = fs.WalkDir(consoleFiles, "console", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		gz, err := consoleFiles.ReadFile(p)
		if err != nil {
			return err
		}
		p = strings.TrimSuffix(p, ".gz")
		ct, ok := consoleTypes[path.Ext(p)]
		if !ok {
			ct = "application/octet-stream"
		}
		sum := sha256.Sum256(gz)
		out["/"+p] = asset{gz: gz, contentType: ct, etag: hex.EncodeToString(sum[:8]),
			raw: sync.OnceValue(func() []byte {
				zr, err := gzip.NewReader(bytes.NewReader(gz))
				if err != nil {
					panic("console: " + p + ": " + err.Error()) // checked by TestConsoleFiles
				}
				b, err := io.ReadAll(zr)
				if err != nil {
					panic("console: " + p + ": " + err.Error())
				}
				return b
			})}
		return nil
	})
	return out
})

// console serves GET / (the page) and GET /console/<file>.
// consoleHSTS is the Strict-Transport-Security of the console over TLS.
const consoleHSTS = "max-age=31536000"

func (s *Server) console(ctx *fasthttp.RequestCtx, p string) error {
	if p == "/" {
		p = consolePrefix + "index.html"
	}
	a, ok := consoleAssets()[p]
	if !ok || strings.Contains(p, "..") {
		return wire.Errorf(wire.CodeNotFound, "no console file %s", p)
	}
	if !ctx.IsGet() && !ctx.IsHead() {
		ctx.Response.Header.Set(fasthttp.HeaderAllow, "GET, HEAD")
		return wire.Errorf(wire.CodeMethodNotAllowed, "%s is not allowed on %s", ctx.Method(), p)
	}
	gz := ctx.Request.Header.HasAcceptEncoding("gzip")
	etag := `"` + a.etag + `"`
	if !gz {
		etag = `"` + a.etag + `-id"`
	}
	h := &ctx.Response.Header
	h.Set("Content-Security-Policy", consoleCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	if ctx.IsTLS() {
		// Served over TLS: the browser keeps to https for this host.
		h.Set(fasthttp.HeaderStrictTransportSecurity, consoleHSTS)
	}
	h.Set(fasthttp.HeaderCacheControl, "no-cache")
	h.Set(fasthttp.HeaderVary, "Accept-Encoding")
	h.Set(fasthttp.HeaderETag, etag)
	if inm := ctx.Request.Header.Peek(fasthttp.HeaderIfNoneMatch); len(inm) > 0 && strings.Contains(string(inm), etag) {
		ctx.SetStatusCode(fasthttp.StatusNotModified)
		return nil
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType(a.contentType)
	if gz {
		h.Set(fasthttp.HeaderContentEncoding, "gzip")
		ctx.SetBody(a.gz)
		return nil
	}
	ctx.SetBody(a.raw())
	return nil
}
