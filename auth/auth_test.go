package auth_test

import (
	"testing"

	"github.com/synapse-edge/synapse/auth"
)

func TestPrincipalCan(t *testing.T) {
	tests := []struct {
		scopes []auth.Scope
		scope  auth.Scope
		want   bool
	}{
		{[]auth.Scope{auth.ScopeAdmin}, auth.ScopeAdmin, true},
		{[]auth.Scope{auth.ScopeAdmin}, auth.ScopeTasksWrite, true},
		{[]auth.Scope{auth.ScopeAdmin}, auth.ScopeTasksRead, true},
		{[]auth.Scope{auth.ScopeTasksWrite}, auth.ScopeTasksWrite, true},
		{[]auth.Scope{auth.ScopeTasksWrite}, auth.ScopeTasksRead, true},
		{[]auth.Scope{auth.ScopeTasksWrite}, auth.ScopeAdmin, false},
		{[]auth.Scope{auth.ScopeTasksRead}, auth.ScopeTasksRead, true},
		{[]auth.Scope{auth.ScopeTasksRead}, auth.ScopeTasksWrite, false},
		{[]auth.Scope{auth.ScopeTasksRead}, auth.ScopeAdmin, false},
		{nil, auth.ScopeTasksRead, false},
		{[]auth.Scope{"unknown"}, auth.ScopeTasksRead, false},
		{[]auth.Scope{auth.ScopeTasksRead, auth.ScopeTasksWrite}, auth.ScopeTasksWrite, true},
	}
	for _, tt := range tests {
		name := ""
		for i, s := range tt.scopes {
			if i > 0 {
				name += ","
			}
			name += string(s)
		}
		t.Run(name+"/"+string(tt.scope), func(t *testing.T) {
			p := auth.Principal{ID: "p", Scopes: tt.scopes}
			if got := p.Can(tt.scope); got != tt.want {
				t.Errorf("Principal%v.Can(%s) = %v, want %v", tt.scopes, tt.scope, got, tt.want)
			}
		})
	}
}

// TestCanMore: the other scopes: tier-1 write implies read, nothing else
// is implied across kinds or levels.
func TestCanMore(t *testing.T) {
	for _, tc := range []struct {
		held  []auth.Scope
		scope auth.Scope
		want  bool
	}{
		{[]auth.Scope{auth.ScopeAdmin}, auth.ScopeHILL3, true},
		{[]auth.Scope{auth.ScopeAdmin}, auth.ScopeRegistryWrite, true},
		{[]auth.Scope{auth.ScopeTasksWrite}, auth.ScopeTasksRead, true},
		{[]auth.Scope{auth.ScopeTier1Write}, auth.ScopeTier1Read, true},
		{[]auth.Scope{auth.ScopeTasksRead}, auth.ScopeTasksWrite, false},
		{[]auth.Scope{auth.ScopeTasksWrite}, auth.ScopeTier1Read, false},
		{[]auth.Scope{auth.ScopeHILL1}, auth.ScopeHILL2, false},
		{nil, auth.ScopeTasksRead, false},
	} {
		p := auth.Principal{ID: "p", Scopes: tc.held}
		if got := p.Can(tc.scope); got != tc.want {
			t.Errorf("%v Can(%s) = %v, want %v", tc.held, tc.scope, got, tc.want)
		}
	}
}

// TestZeroTokens: tokens not loaded refuse every bearer token.
func TestZeroTokens(t *testing.T) {
	var ts auth.Tokens
	for _, tok := range []string{"", "x", "syn_abc"} {
		if _, err := ts.Authenticate(tok); err == nil {
			t.Errorf("Authenticate(%q) on unloaded tokens succeeded", tok)
		}
	}
}
