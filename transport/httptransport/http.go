// Package httptransport is the transport.Transport of http and https
// destinations: a message is one request, its answer one response, read
// within bounds and classified by transport.Classify.
//
// Where each kind of message goes:
//
//	Envelope  POST {To}/api/v1/synapse/message         (a peer's message endpoint)
//	Envelopes POST {To}/api/v1/synapse/message/batch   (a batch of envelopes)
//	Batch     POST {To}/api/v1/synapse/tier1/{routine} (an upstream's tier-1 ingest)
//	Callback  POST {To}                                (a webhook)
//	Request   POST {To}                                (a service)
//	Fetch     GET  {To}                                (a document)
//
// Message headers go out as request headers (HeaderRoutine goes in the
// path instead). Callbacks are dialed through Options.Guard (the outbound
// policy of URLs a client gave), never through a proxy. Redirects are not followed: a signed message is for the
// endpoint it was sent to, and a webhook URL passed the outbound policy,
// its redirect target did not. Of an answer, at most Message.MaxReply
// bytes are read (the rest, up to 1 MiB, is drained so that the
// connection can be reused); a TPError body is decoded in JSON or msgpack
// by its Content-Type; Retry-After is read in seconds or as an HTTP date.
//
// An https destination is verified against the system roots or
// Options.RootCAs, unless the message carries a TLSPin: then exactly the
// certificate of that SHA-256 is accepted (pinned.go), through a client
// of its own per fingerprint.
package httptransport

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// Paths of the agent endpoints messages go to.
const (
	MessagePath = wire.APIPrefix + "/message"
	BatchPath   = wire.APIPrefix + "/message/batch"
	Tier1Path   = wire.APIPrefix + "/tier1/"
)

// drainLimit bounds what is read past MaxReply to keep a connection.
const drainLimit = 1 << 20

// Options configure a Transport. The zero value is usable.
type Options struct {
	// Guard dials the connections of Callbacks (URLs a client gave): the
	// outbound policy's DialContext, which refuses private addresses.
	// Callbacks never go through a proxy, so that the guard sees the
	// address actually connected to. Default: the standard dialer.
	Guard func(ctx context.Context, network, addr string) (net.Conn, error)
	// Timeout bounds one Send (0: only ctx bounds it).
	Timeout time.Duration
	// MaxIdleConnsPerHost keeps connections to a destination for reuse
	// (default 8).
	MaxIdleConnsPerHost int
	// UserAgent is sent unless the message names one (default "synapse").
	UserAgent string
	// Now reads the clock for Retry-After dates (default time.Now).
	Now func() time.Time
	// RootCAs, if set, are the CAs https destinations are verified
	// against (default: the system roots).
	RootCAs *x509.CertPool
}

// Transport sends messages over HTTP/1.1. Callbacks go out through the
// guarded client; the other kinds, to destinations an operator
// configured or paired, through the direct one (which honours
// HTTP_PROXY and friends). It is safe for concurrent use.
type Transport struct {
	direct, guarded *http.Client
	pinned          pinnedClients
	ua              string
	now             func() time.Time
}

var _ transport.Transport = (*Transport)(nil)

// New builds a Transport.
func New(o Options) *Transport {
	idle := o.MaxIdleConnsPerHost
	if idle <= 0 {
		idle = 8
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	client := func(ht *http.Transport) *http.Client {
		ht.MaxIdleConnsPerHost = idle
		ht.IdleConnTimeout = 90 * time.Second
		ht.DisableCompression = true
		return &http.Client{
			Timeout:       o.Timeout,
			Transport:     ht,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	guard := o.Guard
	if guard == nil {
		guard = dialer.DialContext
	}
	t := &Transport{
		direct:  client(&http.Transport{Proxy: http.ProxyFromEnvironment, DialContext: dialer.DialContext, TLSClientConfig: tlsConfig(o.RootCAs)}),
		guarded: client(&http.Transport{DialContext: guard, TLSClientConfig: tlsConfig(o.RootCAs)}),
		ua:      o.UserAgent, now: o.Now,
	}
	t.pinned = pinnedClients{build: client, base: func() *http.Transport {
		return &http.Transport{Proxy: http.ProxyFromEnvironment, DialContext: dialer.DialContext}
	}}
	if t.ua == "" {
		t.ua = "synapse"
	}
	if t.now == nil {
		t.now = time.Now
	}
	return t
}

// tlsConfig is the client TLS config of roots (nil: Go's default, the
// system roots).
func tlsConfig(roots *x509.CertPool) *tls.Config {
	if roots == nil {
		return nil
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}
}

// Close closes idle connections; the Transport stays usable.
func (t *Transport) Close() error {
	t.direct.CloseIdleConnections()
	t.guarded.CloseIdleConnections()
	t.pinned.close()
	return nil
}

// Send delivers m and classifies the answer.
func (t *Transport) Send(ctx context.Context, m *transport.Message) transport.Outcome {
	req, err := t.request(ctx, m)
	if err != nil {
		return transport.Refused(err)
	}
	c := t.direct
	switch {
	case m.Kind == transport.Callback:
		c = t.guarded
	case m.TLSPin != "" && req.URL.Scheme == "https":
		c = t.pinned.get(m.TLSPin)
	}
	resp, err := c.Do(req)
	if err != nil {
		return transport.Unreachable(err)
	}
	defer resp.Body.Close()
	limit := m.MaxReply
	if limit <= 0 {
		limit = transport.DefaultMaxReply
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	truncated := len(body) > limit
	if truncated {
		body = body[:limit]
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
	}
	if err != nil && resp.StatusCode/100 == 2 {
		// A delivery whose answer broke off was still taken; a reply
		// the caller needs will not decode, and it says so.
		truncated = true
	}
	a := transport.Answer{Status: resp.StatusCode, Body: body, ContentType: resp.Header.Get("Content-Type"),
		Header: replyHeader(resp.Header)}
	if resp.StatusCode/100 != 2 {
		a.RetryAfter = RetryAfter(resp.Header.Get("Retry-After"), t.now())
		if !truncated {
			a.Error = transport.DecodeError(body, a.ContentType)
		}
	}
	o := transport.Classify(m.Kind, a)
	o.Truncated = truncated
	return o
}

// request builds the HTTP request of m.
func (t *Transport) request(ctx context.Context, m *transport.Message) (*http.Request, error) {
	u, err := url.Parse(m.To)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // leave out the URL: it may carry a secret
		}
		return nil, fmt.Errorf("destination URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("destination is not an http or https URL with a host")
	}
	target, method := m.To, http.MethodPost
	switch m.Kind {
	case transport.Envelope:
		target = strings.TrimRight(m.To, "/") + MessagePath
	case transport.Envelopes:
		target = strings.TrimRight(m.To, "/") + BatchPath
	case transport.Batch:
		routine := m.Header[transport.HeaderRoutine]
		if routine == "" {
			return nil, errors.New("a batch without its routine id")
		}
		target = strings.TrimRight(m.To, "/") + Tier1Path + url.PathEscape(routine)
	case transport.Callback, transport.Request:
	case transport.Fetch:
		method = http.MethodGet
	default:
		return nil, fmt.Errorf("unknown message kind %d", m.Kind)
	}
	var body io.Reader
	if m.Kind != transport.Fetch {
		body = bytes.NewReader(m.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, err
	}
	if m.ContentType != "" && m.Kind != transport.Fetch {
		req.Header.Set("Content-Type", m.ContentType)
	}
	req.Header.Set("User-Agent", t.ua)
	for k, v := range m.Header {
		if k != transport.HeaderRoutine {
			req.Header.Set(k, v)
		}
	}
	return req, nil
}

// replyHeader keeps the answer's X-Synapse-* headers and its
// Accept-Encoding (the request codings an upstream takes, RFC 7694, which
// the tier-1 exporter reads).
func replyHeader(h http.Header) map[string]string {
	var out map[string]string
	for k, v := range h {
		if len(v) > 0 && (strings.HasPrefix(k, "X-Synapse-") || k == "Accept-Encoding") {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v[0]
		}
	}
	return out
}

// RetryAfter reads a Retry-After value: delay-seconds or an HTTP date
// (against now). It is 0 when absent, unreadable or in the past, and at
// most transport.MaxRetryAfter.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s > int64(transport.MaxRetryAfter/time.Second) {
			return transport.MaxRetryAfter
		}
		d = time.Duration(s) * time.Second
	} else if at, err := http.ParseTime(v); err == nil {
		d = at.Sub(now)
	}
	return min(max(d, 0), transport.MaxRetryAfter)
}
