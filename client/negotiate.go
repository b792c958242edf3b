package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/synapse-edge/synapse/negotiate"
)

// NegotiateRequest is the body of POST /negotiate: a negotiate_request
// payload and the peer to negotiate with. Candidate lists left nil are
// filled by the agent from its configuration.
type NegotiateRequest struct {
	Peer string `json:"peer"`
	negotiate.Request
}

// Contract is a protocol contract as an agent keeps it.
type Contract struct {
	Contract negotiate.Contract `json:"contract"`
	// Peer is the other agent; Role is "requester" or "responder".
	Peer string `json:"peer"`
	Role string `json:"role"`
	// Status is active, expired or revoked.
	Status    string `json:"status"`
	CreatedAt string `json:"created_at"`
	RevokedAt string `json:"revoked_at,omitempty"`
	RevokedBy string `json:"revoked_by,omitempty"`
}

// ContractPage is one page of GET /contracts.
type ContractPage struct {
	Contracts     []Contract `json:"contracts"`
	NextPageToken string     `json:"next_page_token"`
}

// Negotiate asks the agent to negotiate a contract with a peer (POST
// /negotiate, admin scope). A refusal is an *APIError with the TP-NEG code
// and, in Details, the seed's rejected / reason / alternative_proposal.
func (c *Client) Negotiate(ctx context.Context, req NegotiateRequest) (*Contract, error) {
	var out Contract
	if _, _, err := c.do(ctx, http.MethodPost, "/negotiate", nil, &req, &out); err != nil {
		return nil, fmt.Errorf("negotiate with %s: %w", req.Peer, err)
	}
	return &out, nil
}

// ListContracts returns one page of contracts (GET /contracts): a peer's
// newest first when peer is set, else all in creation order from after
// pageToken.
func (c *Client) ListContracts(ctx context.Context, peer, pageToken string, limit int) (*ContractPage, error) {
	q := url.Values{}
	if peer != "" {
		q.Set("peer", peer)
	}
	if pageToken != "" {
		q.Set("page_token", pageToken)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out ContractPage
	if _, _, err := c.do(ctx, http.MethodGet, "/contracts", q, nil, &out); err != nil {
		return nil, fmt.Errorf("list contracts: %w", err)
	}
	return &out, nil
}

// GetContract returns one contract (GET /contracts/{id}).
func (c *Client) GetContract(ctx context.Context, id string) (*Contract, error) {
	eid, err := escapeID(id)
	if err != nil {
		return nil, fmt.Errorf("get contract: %w", err)
	}
	var out Contract
	if _, _, err := c.do(ctx, http.MethodGet, "/contracts/"+eid, nil, nil, &out); err != nil {
		return nil, fmt.Errorf("get contract %s: %w", id, err)
	}
	return &out, nil
}

// RevokeContract revokes a contract on the agent and tells the peer (POST
// /contracts/{id}/revoke, admin scope).
func (c *Client) RevokeContract(ctx context.Context, id string) (*Contract, error) {
	eid, err := escapeID(id)
	if err != nil {
		return nil, fmt.Errorf("revoke contract: %w", err)
	}
	var out Contract
	if _, _, err := c.do(ctx, http.MethodPost, "/contracts/"+eid+"/revoke", nil, nil, &out); err != nil {
		return nil, fmt.Errorf("revoke contract %s: %w", id, err)
	}
	return &out, nil
}
