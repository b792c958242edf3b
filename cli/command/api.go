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

// API sends one JSON request to the agent of the global flags (route below
// /api/v1/synapse) and decodes a 2xx answer into out; other answers are
// *client.APIError. It returns the status. It serves the routes package
// client has no method for (groups, votes).
func (s *Session) API(ctx context.Context, method, route string, query url.Values, body, out any) (int, error) {
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
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
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
