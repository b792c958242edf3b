// Package client is a Go client for the REST API of a Synapse agent
// (routes under /api/v1/synapse): submitting and following tasks, the
// server-sent event stream of a task, health and identity, and the admin
// routes for API tokens and the database.
//
// It uses net/http, and github.com/fasthttp/websocket for the tier-1
// stream; it does not link the agent itself. Every method takes a context
// first; cancel it to stop a call, including a task stream.
//
// Errors answered by the agent are *APIError values carrying the stable
// error code of the agent's registry:
//
//	c := client.New("http://127.0.0.1:8080", token)
//	sub, _, err := c.SubmitTask(ctx, client.SubmitRequest{TaskType: "echo",
//		Payload: json.RawMessage(`{"msg":"hi"}`)}, client.SubmitOptions{})
//	var apiErr *client.APIError
//	if errors.As(err, &apiErr) && apiErr.Code == "rate_limited" { ... }
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// MaxResponseSize bounds a JSON answer the client reads (a task result can
// be large, but not unbounded).
const MaxResponseSize = 64 << 20

// MaxWait is the longest SubmitOptions.Wait the agent honours.
const MaxWait = 60 * time.Second

// Stream reconnect defaults (see WithStreamRetries).
const (
	defaultStreamRetries = 5
	defaultRetryDelay    = 500 * time.Millisecond
	maxRetryDelay        = 10 * time.Second
)

// Client talks to one agent. It is safe for concurrent use.
type Client struct {
	base          string // scheme://host[:port][/path], no trailing slash
	token         string
	hc            *http.Client
	userAgent     string
	streamRetries int
	retryDelay    time.Duration
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the client send its requests through hc. The
// default is a client without an overall timeout (task streams are long);
// bound calls with their context.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// WithStreamRetries sets how many times in a row StreamTask reconnects
// without receiving a new event before it gives up, and the first delay
// between attempts (doubled each time, at most 10 s; a retry: field from
// the agent replaces it).
func WithStreamRetries(n int, delay time.Duration) Option {
	return func(c *Client) {
		c.streamRetries = max(n, 0)
		if delay > 0 {
			c.retryDelay = delay
		}
	}
}

// New returns a client for the agent at baseURL (for example
// "http://127.0.0.1:8080") that sends token as a bearer token when it is
// not empty.
func New(baseURL, token string, opts ...Option) *Client {
	c := &Client{
		base:          strings.TrimRight(baseURL, "/"),
		token:         token,
		hc:            &http.Client{},
		userAgent:     "synapse-client",
		streamRetries: defaultStreamRetries,
		retryDelay:    defaultRetryDelay,
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// BaseURL returns the agent address the client was made for.
func (c *Client) BaseURL() string { return c.base }

// newRequest builds a request for route (below wire.APIPrefix) with a JSON body
// when body is not nil.
func (c *Client) newRequest(ctx context.Context, method, route string, query url.Values, body any) (*http.Request, error) {
	u := c.base + wire.APIPrefix + route
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode %s %s body: %w", method, route, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, route, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// send performs req and returns the response when its status is 2xx;
// otherwise it reads the body into an *APIError and closes it.
func (c *Client) send(req *http.Request) (*http.Response, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return nil, DecodeError(resp.StatusCode, body)
}

// do sends a request and decodes a JSON answer into out (when out is not
// nil and the answer has a body). It returns the status code and headers.
func (c *Client) do(ctx context.Context, method, route string, query url.Values, body, out any) (int, http.Header, error) {
	req, err := c.newRequest(ctx, method, route, query, body)
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.send(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if err := readJSON(resp.Body, out); err != nil {
		return resp.StatusCode, resp.Header, fmt.Errorf("%s %s: %w", method, route, err)
	}
	return resp.StatusCode, resp.Header, nil
}

// readJSON decodes at most MaxResponseSize bytes of r into out; an empty
// body leaves out untouched.
func readJSON(r io.Reader, out any) error {
	b, err := io.ReadAll(io.LimitReader(r, MaxResponseSize+1))
	if err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	if len(b) > MaxResponseSize {
		return ErrResponseTooLarge
	}
	if out == nil || len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	return nil
}

// escapeID checks and escapes an id for use as one path segment.
func escapeID(id string) (string, error) {
	if id == "" {
		return "", ErrEmptyID
	}
	return url.PathEscape(id), nil
}
