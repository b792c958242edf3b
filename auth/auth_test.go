package auth_test

import (
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/auth"
)

func TestPrincipalCan(t *testing.T) {
	tests := []struct {
		scopes []string
		scope  string
		want   bool
	}{
		{[]string{auth.ScopeAdmin}, auth.ScopeAdmin, true},
		{[]string{auth.ScopeAdmin}, auth.ScopeTasksWrite, true},
		{[]string{auth.ScopeAdmin}, auth.ScopeTasksRead, true},
		{[]string{auth.ScopeTasksWrite}, auth.ScopeTasksWrite, true},
		{[]string{auth.ScopeTasksWrite}, auth.ScopeTasksRead, true},
		{[]string{auth.ScopeTasksWrite}, auth.ScopeAdmin, false},
		{[]string{auth.ScopeTasksRead}, auth.ScopeTasksRead, true},
		{[]string{auth.ScopeTasksRead}, auth.ScopeTasksWrite, false},
		{[]string{auth.ScopeTasksRead}, auth.ScopeAdmin, false},
		{nil, auth.ScopeTasksRead, false},
		{[]string{"unknown"}, auth.ScopeTasksRead, false},
		{[]string{auth.ScopeTasksRead, auth.ScopeTasksWrite}, auth.ScopeTasksWrite, true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.scopes, ",")+"/"+tt.scope, func(t *testing.T) {
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
		held  []string
		scope string
		want  bool
	}{
		{[]string{auth.ScopeAdmin}, auth.ScopeHILL3, true},
		{[]string{auth.ScopeAdmin}, auth.ScopeRegistryWrite, true},
		{[]string{auth.ScopeTasksWrite}, auth.ScopeTasksRead, true},
		{[]string{auth.ScopeTier1Write}, auth.ScopeTier1Read, true},
		{[]string{auth.ScopeTasksRead}, auth.ScopeTasksWrite, false},
		{[]string{auth.ScopeTasksWrite}, auth.ScopeTier1Read, false},
		{[]string{auth.ScopeHILL1}, auth.ScopeHILL2, false},
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
