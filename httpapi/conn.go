package httpapi

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/wire"
)

// Connection-level answers: every refusal the server makes before a
// handler runs (a request that does not parse, headers too large, a read
// timeout, too many connections) is a TPError in JSON like any other, and
// never repeats what the client sent: the bytes of a request that does not
// parse may hold its bearer token.

// connError is fasthttp's ErrorHandler: the request could not be read.
func (s *Server) connError(ctx *fasthttp.RequestCtx, err error) {
	ctx.Response.Reset()
	var e *wire.Error
	var small *fasthttp.ErrSmallBuffer
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		e = wire.Errorf(wire.CodePayloadTooLarge, "the request body is larger than the limit")
	case errors.As(err, &small), strings.Contains(err.Error(), "small read buffer"), strings.Contains(err.Error(), "too big"):
		e = wire.Errorf(wire.CodeMessageFormatInvalid, "request headers are too large (http.max_header_bytes)")
		ctx.SetContentType(wire.ContentJSON)
		body, _ := wire.JSON.Marshal(wire.ErrorBody{Error: e})
		writeRaw(ctx, fasthttp.StatusRequestHeaderFieldsTooLarge, wire.ContentJSON, body)
		return
	case strings.Contains(err.Error(), "content-length: too long int"):
		// A declared length past the machine's int (a 32-bit build and
		// 50 GiB): over every limit, answered before the body as the
		// header check does (HeaderReceived, which it never reached).
		e = wire.Errorf(wire.CodePayloadTooLarge, "the declared Content-Length is larger than the limit")
	case isTimeout(err):
		e = wire.Errorf(wire.CodeRequestTimeout, "the request was not received within the read timeout")
	default:
		e = wire.Errorf(wire.CodeMessageFormatInvalid, "the request could not be parsed as HTTP/1.1")
	}
	writeError(ctx, e)
}

// connLogger sends fasthttp's connection errors (garbage on the socket,
// bodies over the limit) to the server's logger at debug level instead of
// the standard logger, with credentials blanked out.
type connLogger struct{ l *slog.Logger }

func (c connLogger) Printf(format string, args ...any) {
	c.l.Debug("connection", "msg", redact(fmt.Sprintf(format, args...)))
}

// secretHeaders matches header lines and bearer values that carry
// credentials, wherever they appear in a message.
var secretHeaders = regexp.MustCompile(`(?i)((?:proxy-)?authorization|cookie|x-synapse-signature|x-api-key)(\s*[:=]\s*)[^\r\n"]*|(bearer|basic)\s+[^\s"\\]+`)

// redact blanks out credentials in s.
func redact(s string) string {
	return secretHeaders.ReplaceAllStringFunc(s, func(m string) string {
		sub := secretHeaders.FindStringSubmatch(m)
		if sub[1] != "" {
			return sub[1] + sub[2] + "[redacted]"
		}
		return sub[3] + " [redacted]"
	})
}

// limitListener enforces http.max_conns and http.max_conns_per_ip at
// accept time, answering the connections it refuses with a TPError (429
// too_many_connections, 503 TP-SYS001) before closing them. A connection
// counts until it is closed, hijacked streams included.
type limitListener struct {
	net.Listener
	max, perIP int
	// tls, if set, makes every accepted connection a TLS one (tls.go).
	tls *tls.Config

	mu    sync.Mutex
	total int
	byIP  map[string]int
}

func newLimitListener(ln net.Listener, max, perIP int, tlsConfig *tls.Config) *limitListener {
	return &limitListener{Listener: ln, max: max, perIP: perIP, tls: tlsConfig, byIP: map[string]int{}}
}

// refusalWrite bounds the write of a refusal.
const refusalWrite = 200 * time.Millisecond

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c)
		l.mu.Lock()
		var refuse *wire.Error
		switch {
		case l.total >= l.max:
			refuse = wire.Errorf(wire.CodeSysOverloaded, "the agent serves its maximum of %d connections (http.max_conns); retry later", l.max)
		case l.byIP[ip] >= l.perIP:
			refuse = wire.Errorf(wire.CodeTooManyConnections, "%d connections from this address are open (http.max_conns_per_ip); close some or retry later", l.perIP)
		default:
			l.total++
			l.byIP[ip]++
		}
		l.mu.Unlock()
		if refuse != nil {
			if l.tls != nil {
				// The refusal needs a handshake first: not in the
				// accept loop, and bounded by tlsRefusalDeadline.
				go refuseConn(wrapTLS(c, l.tls), refuse, tlsRefusalDeadline)
			} else {
				refuseConn(c, refuse, refusalWrite)
			}
			continue
		}
		lc := &limitedConn{Conn: c, l: l, ip: ip}
		if l.tls != nil {
			tc := wrapTLS(c, l.tls)
			lc.Conn = tlsConn{tc}
			return &limitedTLSConn{limitedConn: lc, tc: tc}, nil
		}
		return lc, nil
	}
}

func (l *limitListener) release(ip string) {
	l.mu.Lock()
	l.total--
	if l.byIP[ip]--; l.byIP[ip] <= 0 {
		delete(l.byIP, ip)
	}
	l.mu.Unlock()
}

// refuseConn writes e as a complete HTTP answer within d and closes c.
func refuseConn(c net.Conn, e *wire.Error, d time.Duration) {
	body, _ := wire.JSON.Marshal(wire.ErrorBody{Error: e})
	_ = c.SetDeadline(time.Now().Add(d))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s",
		e.Status(), fasthttp.StatusMessage(e.Status()), wire.ContentJSON, len(body), body)
	_ = c.Close()
}

func remoteIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

// limitedConn gives its slot back when closed (once).
type limitedConn struct {
	net.Conn
	l    *limitListener
	ip   string
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.ip) })
	return err
}
