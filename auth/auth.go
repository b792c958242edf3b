// Package auth is who may call an agent: bearer tokens (only their
// SHA-256 is stored), the principal each maps to, and the scopes a
// principal holds. The agent keeps one Tokens; the API layers
// authenticate every request with it.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/synapse-edge/synapse/auth/tokendb"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Scope is a permission a token carries ("tasks:read", "admin", ...).
type Scope string

// Scopes a token can carry, those of wire.TokenScopes. admin implies
// every other; X:write implies X:read; tasks:read implies metrics.
const (
	ScopeTasksRead  Scope = wire.ScopeTasksRead
	ScopeTasksWrite Scope = wire.ScopeTasksWrite
	ScopeTier1Read  Scope = wire.ScopeTier1Read
	ScopeTier1Write Scope = wire.ScopeTier1Write
	ScopeAdmin      Scope = wire.ScopeAdmin
	// Reviewers of human-in-the-loop requests, one scope per escalation
	// level (the defaults of hil.levels).
	ScopeHILL1 Scope = wire.ScopeHILL1
	ScopeHILL2 Scope = wire.ScopeHILL2
	ScopeHILL3 Scope = wire.ScopeHILL3
	// ScopeRegistryWrite lets an agent register with this one when it
	// acts as a registry (seed 000 §6.4).
	ScopeRegistryWrite Scope = wire.ScopeRegistryWrite
	// ScopeMetrics reads /metrics and nothing else: a Prometheus scraper's.
	ScopeMetrics Scope = wire.ScopeMetrics
)

// KnownScopes lists the scopes tokens may be created with: wire.TokenScopes.
var KnownScopes = func() []Scope {
	out := make([]Scope, len(wire.TokenScopes))
	for i, s := range wire.TokenScopes {
		out[i] = Scope(s.Name)
	}
	return out
}()

// Principal is who a request comes from.
type Principal struct {
	// ID scopes idempotency keys; "admin" for the admin token.
	ID     string
	Name   string
	Scopes []Scope
}

// Can reports whether p holds scope.
func (p Principal) Can(scope Scope) bool {
	for _, s := range p.Scopes {
		if s == scope || s == ScopeAdmin || (s == ScopeTasksWrite && scope == ScopeTasksRead) ||
			(s == ScopeTier1Write && scope == ScopeTier1Read) ||
			(scope == ScopeMetrics && (s == ScopeTasksRead || s == ScopeTasksWrite)) {
			return true
		}
	}
	return false
}

// joinScopes lists scopes separated by ", ".
func joinScopes(scopes []Scope) string { return strings.Join(scopeStrings(scopes), ", ") }

// scopeStrings and scopesOf convert to and from the store's form.
func scopeStrings(scopes []Scope) []string {
	out := make([]string, len(scopes))
	for i, s := range scopes {
		out[i] = string(s)
	}
	return out
}

func scopesOf(stored []string) []Scope {
	out := make([]Scope, len(stored))
	for i, s := range stored {
		out[i] = Scope(s)
	}
	return out
}

// Tokens is the token store of one agent: the hashes of its tokens (kept in
// the agent's store and in memory) and the admin token's. The zero value
// refuses every token until Load.
type Tokens struct {
	db  *store.DB
	now func() time.Time

	mu        sync.RWMutex
	byHash    map[[32]byte]Principal
	adminHash [32]byte
	// revoked holds, per token id, a channel closed when the token is
	// revoked (made on demand by Revoked).
	revoked map[string]chan struct{}
}

// Load reads the tokens of db and takes admin as the admin token; now
// stamps the tokens created.
func (ts *Tokens) Load(db *store.DB, admin string, now func() time.Time) error {
	ts.db, ts.now = db, now
	ts.adminHash = sha256.Sum256([]byte(admin))
	ts.byHash = map[[32]byte]Principal{}
	return db.View(func(tx *store.Tx) error {
		list, err := tokendb.List(tx)
		for _, t := range list {
			var h [32]byte
			copy(h[:], t.Hash)
			ts.byHash[h] = Principal{ID: t.ID, Name: t.Name, Scopes: scopesOf(t.Scopes)}
		}
		return err
	})
}

// Authenticate maps a bearer token to its principal.
func (ts *Tokens) Authenticate(token string) (Principal, error) {
	if token == "" {
		return Principal{}, wire.Errorf(wire.CodeUnauthorized, "missing bearer token")
	}
	h := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(h[:], ts.adminHash[:]) == 1 {
		return Principal{ID: "admin", Name: "admin", Scopes: []Scope{ScopeAdmin}}, nil
	}
	ts.mu.RLock()
	p, ok := ts.byHash[h]
	ts.mu.RUnlock()
	if !ok {
		return Principal{}, wire.Errorf(wire.CodeUnauthorized, "unknown or revoked token")
	}
	return p, nil
}

// TokenInfo is a token as listed (without its secret).
type TokenInfo struct {
	ID        string  `json:"token_id" msgpack:"token_id"`
	Name      string  `json:"name" msgpack:"name"`
	Scopes    []Scope `json:"scopes" msgpack:"scopes"`
	CreatedAt string  `json:"created_at" msgpack:"created_at"`
	// Token is the secret, present only in the answer that creates it.
	Token string `json:"token,omitempty" msgpack:"token,omitempty"`
}

// Create makes a token with the given scopes; its secret is returned
// once and only its hash is stored.
func (ts *Tokens) Create(ctx context.Context, name string, scopes []Scope) (*TokenInfo, error) {
	if name == "" || len(name) > 128 {
		return nil, wire.Errorf(wire.CodeInvalidParams, "name must be 1 to 128 bytes").With("field", "name")
	}
	if len(scopes) == 0 {
		return nil, wire.Errorf(wire.CodeInvalidParams, "give at least one scope (%s)", joinScopes(KnownScopes)).With("field", "scopes")
	}
	for _, s := range scopes {
		if !slices.Contains(KnownScopes, s) {
			return nil, wire.Errorf(wire.CodeInvalidParams, "unknown scope %q (known: %s)", s, joinScopes(KnownScopes)).With("field", "scopes")
		}
	}
	var secret, idb [16]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return nil, err
	}
	if _, err := rand.Read(idb[:6]); err != nil {
		return nil, err
	}
	tok := "syn_" + base64.RawURLEncoding.EncodeToString(secret[:])
	h := sha256.Sum256([]byte(tok))
	rec := &tokendb.Token{ID: "tok_" + hex.EncodeToString(idb[:6]), Name: name, Scopes: scopeStrings(scopes), Hash: h[:], CreatedAt: ts.now().UTC()}
	if err := ts.db.Update(ctx, func(tx *store.Tx) error { return tokendb.Put(tx, rec) }); err != nil {
		return nil, fmt.Errorf("create token: %w", err)
	}
	ts.mu.Lock()
	ts.byHash[h] = Principal{ID: rec.ID, Name: name, Scopes: scopes}
	ts.mu.Unlock()
	return &TokenInfo{ID: rec.ID, Name: name, Scopes: scopes, CreatedAt: wire.FormatTime(rec.CreatedAt), Token: tok}, nil
}

// List lists the tokens.
func (ts *Tokens) List() ([]TokenInfo, error) {
	var out []TokenInfo
	err := ts.db.View(func(tx *store.Tx) error {
		list, err := tokendb.List(tx)
		for _, t := range list {
			out = append(out, TokenInfo{ID: t.ID, Name: t.Name, Scopes: scopesOf(t.Scopes), CreatedAt: wire.FormatTime(t.CreatedAt)})
		}
		return err
	})
	return out, err
}

// Revoke deletes a token; it stops working at once.
func (ts *Tokens) Revoke(ctx context.Context, id string) error {
	err := ts.db.Update(ctx, func(tx *store.Tx) error { return tokendb.Delete(tx, id) })
	if errors.Is(err, store.ErrNotFound) {
		return wire.Errorf(wire.CodeNotFound, "no token with id %q", id)
	}
	if err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	ts.mu.Lock()
	for h, p := range ts.byHash {
		if p.ID == id {
			delete(ts.byHash, h)
		}
	}
	if c, ok := ts.revoked[id]; ok {
		close(c)
		delete(ts.revoked, id)
	}
	ts.mu.Unlock()
	return nil
}

// Revoked returns a channel that is closed when p's token is revoked, so
// that streams opened with it (SSE, WebSocket) end; nil (never closed)
// for the admin token, which cannot be revoked. A token already revoked
// gets a closed channel.
func (ts *Tokens) Revoked(p Principal) <-chan struct{} {
	if p.ID == "" || p.ID == "admin" {
		return nil
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	live := false
	for _, q := range ts.byHash {
		if q.ID == p.ID {
			live = true
			break
		}
	}
	if !live {
		c := make(chan struct{})
		close(c)
		return c
	}
	if ts.revoked == nil {
		ts.revoked = map[string]chan struct{}{}
	}
	c, ok := ts.revoked[p.ID]
	if !ok {
		c = make(chan struct{})
		ts.revoked[p.ID] = c
	}
	return c
}
