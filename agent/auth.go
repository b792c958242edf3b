package agent

import (
	"context"

	"github.com/synapse-edge/synapse/auth"
)

// Tokens, principals and scopes are package auth's; the names below are
// the agent's for its callers.

// Scope is a permission a token carries.
type Scope = auth.Scope

// Scopes a token can carry (auth.ScopeTasksRead, ...).
const (
	ScopeTasksRead     = auth.ScopeTasksRead
	ScopeTasksWrite    = auth.ScopeTasksWrite
	ScopeTier1Read     = auth.ScopeTier1Read
	ScopeTier1Write    = auth.ScopeTier1Write
	ScopeAdmin         = auth.ScopeAdmin
	ScopeHILL1         = auth.ScopeHILL1
	ScopeHILL2         = auth.ScopeHILL2
	ScopeHILL3         = auth.ScopeHILL3
	ScopeRegistryWrite = auth.ScopeRegistryWrite
)

// KnownScopes lists the scopes tokens may be created with.
var KnownScopes = auth.KnownScopes

// Principal is who a request comes from.
type Principal = auth.Principal

// TokenInfo is a token as listed (without its secret).
type TokenInfo = auth.TokenInfo

// Authenticate maps a bearer token to its principal.
func (a *Agent) Authenticate(token string) (Principal, error) { return a.tokens.Authenticate(token) }

// CreateToken makes a token with the given scopes; its secret is returned
// once and only its hash is stored.
func (a *Agent) CreateToken(ctx context.Context, name string, scopes []Scope) (*TokenInfo, error) {
	return a.tokens.Create(ctx, name, scopes)
}

// Tokens lists the tokens.
func (a *Agent) Tokens() ([]TokenInfo, error) { return a.tokens.List() }

// RevokeToken deletes a token; it stops working at once.
func (a *Agent) RevokeToken(ctx context.Context, id string) error { return a.tokens.Revoke(ctx, id) }

// Revoked returns a channel that is closed when p's token is revoked (nil
// for the admin token); see auth.Tokens.Revoked.
func (a *Agent) Revoked(p Principal) <-chan struct{} { return a.tokens.Revoked(p) }
