package httpapi

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"time"
)

// TLS on the listener (Options.TLS): the limit listener counts the
// accepted TCP connections and wraps each in a server-side tls.Conn,
// whose handshake runs on the first read under fasthttp's read timeout.
// A client speaking plain HTTP to the TLS port gets the short 400 text
// Go's own server gives instead of a bare handshake failure.

// plainHTTPAnswer is the answer to plain HTTP on the TLS port.
const plainHTTPAnswer = "HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"

// tlsConn is a server tls.Conn that answers plain HTTP.
type tlsConn struct {
	*tls.Conn
}

func (c tlsConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		var re tls.RecordHeaderError
		if errors.As(err, &re) && re.Conn != nil && looksLikeHTTP(re.RecordHeader) {
			_ = re.Conn.SetWriteDeadline(time.Now().Add(refusalWrite))
			_, _ = io.WriteString(re.Conn, plainHTTPAnswer)
			_ = re.Conn.Close()
		}
	}
	return n, err
}

// looksLikeHTTP reports whether the first bytes of a "TLS record" are an
// HTTP method, as net/http checks.
func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO", "DELET", "PATCH", "CONNE", "TRACE":
		return true
	}
	return false
}

// limitedTLSConn is a limitedConn over TLS; fasthttp sees its handshake
// state (RequestCtx.IsTLS, TLSConnectionState), the client certificate
// among it.
type limitedTLSConn struct {
	*limitedConn
	tc *tls.Conn
}

func (c *limitedTLSConn) Handshake() error                     { return c.tc.Handshake() }
func (c *limitedTLSConn) ConnectionState() tls.ConnectionState { return c.tc.ConnectionState() }

// wrapTLS returns c as the server side of a TLS connection of cfg.
func wrapTLS(c net.Conn, cfg *tls.Config) *tls.Conn { return tls.Server(c, cfg) }

// tlsRefusalDeadline bounds a refusal's handshake and write on a TLS port.
const tlsRefusalDeadline = 2 * time.Second
