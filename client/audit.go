package client

import (
	"context"
	"net/url"
	"strconv"
	"time"
)

// AuditRecord is one security event of the agent's hash-chained audit log.
type AuditRecord struct {
	Seq    uint64         `json:"seq"`
	At     time.Time      `json:"at"`
	Kind   string         `json:"kind"`
	Peer   string         `json:"peer,omitempty"`
	Detail map[string]any `json:"detail,omitempty"`
	Prev   string         `json:"prev"`
	Hash   string         `json:"hash"`
}

// AuditReport is the outcome of verifying the chain.
type AuditReport struct {
	OK      bool   `json:"ok"`
	Records int    `json:"records"`
	BadSeq  uint64 `json:"first_bad_seq,omitempty"`
	Problem string `json:"problem,omitempty"`
	Last    string `json:"last_hash,omitempty"`
}

// AuditLog reads up to limit records after seq after (GET /audit, admin).
func (c *Client) AuditLog(ctx context.Context, after uint64, limit int) ([]AuditRecord, error) {
	q := url.Values{"after": {strconv.FormatUint(after, 10)}, "limit": {strconv.Itoa(limit)}}
	var out struct {
		Records []AuditRecord `json:"records"`
	}
	if _, _, err := c.do(ctx, "GET", "/audit", q, nil, &out); err != nil {
		return nil, err
	}
	return out.Records, nil
}

// VerifyAudit asks the agent to check its audit chain (GET /audit/verify).
func (c *Client) VerifyAudit(ctx context.Context) (*AuditReport, error) {
	var rep AuditReport
	if _, _, err := c.do(ctx, "GET", "/audit/verify", nil, nil, &rep); err != nil {
		return nil, err
	}
	return &rep, nil
}
