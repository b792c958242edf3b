package command

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/wire"
)

// Get asks the agent of the global flags for route (below /api/v1/synapse)
// and decodes a 2xx answer into out; other answers are *client.APIError.
// Get and Post serve the routes package client has no method for (groups,
// votes).
func (s *Session) Get(ctx context.Context, route string, query url.Values, out any) error {
	_, err := s.api(ctx, http.MethodGet, route, query, nil, out)
	return err
}

// Post sends body as JSON to route and decodes a 2xx answer into out;
// accepted reports a 202: the agent passed the request on (to a group's
// owner) and the outcome comes later.
func (s *Session) Post(ctx context.Context, route string, query url.Values, body, out any) (accepted bool, err error) {
	status, err := s.api(ctx, http.MethodPost, route, query, body, out)
	return status == http.StatusAccepted, err
}

// PooledClient is Client with a connection pool of its own that keeps up
// to conns idle connections to the agent; release closes them.
func (s *Session) PooledClient(conns int) (c *client.Client, release func()) {
	tr := s.transport()
	tr.MaxIdleConnsPerHost = conns
	tok, _ := s.Token()
	c = client.New(s.Flags.Agent, tok, client.WithUserAgent(s.UserAgent()),
		client.WithHTTPClient(&http.Client{Transport: tr}))
	return c, tr.CloseIdleConnections
}

// api sends one JSON request to the agent of the global flags and returns
// the status of the answer.
func (s *Session) api(ctx context.Context, method, route string, query url.Values, body, out any) (int, error) {
	u := s.Flags.Agent + wire.APIPrefix + route
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, route, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", s.UserAgent())
	if tok, _ := s.Token(); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	hc := &http.Client{Transport: s.transport(), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, route, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, client.MaxResponseSize))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s: read answer: %w", method, route, err)
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, client.DecodeError(resp.StatusCode, b)
	}
	if out != nil && len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode answer: %w", method, route, err)
		}
	}
	return resp.StatusCode, nil
}
