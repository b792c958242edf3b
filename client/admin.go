package client

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/synapse-edge/synapse/wire"
)

// Health returns the agent's health (GET /health, no token needed).
func (c *Client) Health(ctx context.Context) (*Health, error) {
	var h Health
	if _, _, err := c.do(ctx, http.MethodGet, "/health", nil, nil, &h); err != nil {
		return nil, fmt.Errorf("health: %w", err)
	}
	return &h, nil
}

// Identity returns the agent's public identity (GET /identity, no token
// needed).
func (c *Client) Identity(ctx context.Context) (*Identity, error) {
	var id Identity
	if _, _, err := c.do(ctx, http.MethodGet, "/identity", nil, nil, &id); err != nil {
		return nil, fmt.Errorf("identity: %w", err)
	}
	return &id, nil
}

// CreateToken creates an API token with the given scopes (POST /tokens,
// admin scope). The secret is in the answer only.
func (c *Client) CreateToken(ctx context.Context, name string, scopes []string) (*TokenCreated, error) {
	if scopes == nil {
		scopes = []string{}
	}
	body := map[string]any{"name": name, "scopes": scopes}
	var tc TokenCreated
	if _, _, err := c.do(ctx, http.MethodPost, "/tokens", nil, body, &tc); err != nil {
		return nil, fmt.Errorf("create token: %w", err)
	}
	return &tc, nil
}

// ListTokens lists the API tokens without their secrets (GET /tokens,
// admin scope).
func (c *Client) ListTokens(ctx context.Context) ([]TokenInfo, error) {
	var out struct {
		Tokens []TokenInfo `json:"tokens"`
	}
	if _, _, err := c.do(ctx, http.MethodGet, "/tokens", nil, nil, &out); err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return out.Tokens, nil
}

// RevokeToken deletes an API token (DELETE /tokens/{id}, admin scope).
func (c *Client) RevokeToken(ctx context.Context, id string) error {
	eid, err := escapeID(id)
	if err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	if _, _, err := c.do(ctx, http.MethodDelete, "/tokens/"+eid, nil, nil, nil); err != nil {
		return fmt.Errorf("revoke token %s: %w", id, err)
	}
	return nil
}

// CheckDB asks the agent to check its database (GET /admin/db/check,
// admin scope).
func (c *Client) CheckDB(ctx context.Context) (*DBCheck, error) {
	var dc DBCheck
	if _, _, err := c.do(ctx, http.MethodGet, "/admin/db/check", nil, nil, &dc); err != nil {
		return nil, fmt.Errorf("check db: %w", err)
	}
	return &dc, nil
}

// Backup streams a consistent copy of the agent's database file into w
// (GET /admin/db/backup, admin scope) and returns the number of bytes
// written. A transfer shorter than the announced length is an error.
func (c *Client) Backup(ctx context.Context, w io.Writer) (int64, error) {
	req, err := c.newRequest(ctx, http.MethodGet, "/admin/db/backup", nil, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/octet-stream")
	resp, err := c.send(req)
	if err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("backup: copy after %d bytes: %w", n, err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return n, fmt.Errorf("backup: got %d of %d bytes: %w", n, resp.ContentLength, io.ErrUnexpectedEOF)
	}
	return n, nil
}

// Reload asks the agent to read its config file again (POST
// /admin/reload, admin scope). A refused file is not an error: the
// result says invalid and names every problem (the agent answers 422).
func (c *Client) Reload(ctx context.Context) (*wire.ReloadResult, error) {
	req, err := c.newRequest(ctx, http.MethodPost, "/admin/reload", nil, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reload: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusUnprocessableEntity {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, fmt.Errorf("reload: %w", DecodeError(resp.StatusCode, body))
	}
	var res wire.ReloadResult
	if err := readJSON(resp.Body, &res); err != nil {
		return nil, fmt.Errorf("reload: %w", err)
	}
	return &res, nil
}
