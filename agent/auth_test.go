package agent_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/wire"
)

func TestTokens(t *testing.T) {
	cfg := testConfig(t)
	a := openAgent(t, cfg, nil)
	ctx := context.Background()

	reader, err := a.Tokens().Create(ctx, "dashboard", []auth.Scope{auth.ScopeTasksRead})
	if err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	writer, err := a.Tokens().Create(ctx, "ci", []auth.Scope{auth.ScopeTasksWrite})
	if err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	if reader.Token == "" || reader.Token == writer.Token || reader.ID == writer.ID {
		t.Fatalf("tokens %+v and %+v are not distinct secrets", reader, writer)
	}

	t.Run("authenticate", func(t *testing.T) {
		p, err := a.Tokens().Authenticate(reader.Token)
		if err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
		if p.ID != reader.ID || p.Name != "dashboard" || !slices.Equal(p.Scopes, []auth.Scope{auth.ScopeTasksRead}) {
			t.Errorf("principal = %+v, want %s dashboard [tasks:read]", p, reader.ID)
		}
		if !p.Can(auth.ScopeTasksRead) || p.Can(auth.ScopeTasksWrite) {
			t.Errorf("read token: Can(read)=%v Can(write)=%v", p.Can(auth.ScopeTasksRead), p.Can(auth.ScopeTasksWrite))
		}
		for _, bad := range []string{"", "nope", reader.Token + "x", strings.ToUpper(reader.Token)} {
			_, err := a.Tokens().Authenticate(bad)
			wantCode(t, err, wire.CodeUnauthorized)
		}
	})
	t.Run("list without secrets", func(t *testing.T) {
		list, err := a.Tokens().List()
		if err != nil {
			t.Fatalf("Tokens: %v", err)
		}
		var names []string
		for _, ti := range list {
			names = append(names, ti.Name)
			if ti.Token != "" {
				t.Errorf("Tokens lists the secret of %s", ti.ID)
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"ci", "dashboard"}) {
			t.Errorf("token names = %v, want [ci dashboard]", names)
		}
	})
	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			scopes []auth.Scope
		}{
			{"x", []auth.Scope{"tasks:delete"}},
			{"x", nil},
			{"", []auth.Scope{auth.ScopeTasksRead}},
			{strings.Repeat("n", 129), []auth.Scope{auth.ScopeTasksRead}},
		} {
			_, err := a.Tokens().Create(ctx, tc.name, tc.scopes)
			wantCode(t, err, wire.CodeInvalidParams)
		}
		if list, _ := a.Tokens().List(); len(list) != 2 {
			t.Errorf("%d tokens after refused creations, want 2", len(list))
		}
	})
	// Tokens survive a restart; a revoked one stays revoked.
	closeAgent(t, a, time.Second)
	a = openAgent(t, cfg, nil)
	if _, err := a.Tokens().Authenticate(writer.Token); err != nil {
		t.Fatalf("Authenticate after reopen: %v", err)
	}
	if err := a.Tokens().Revoke(ctx, writer.ID); err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	_, err = a.Tokens().Authenticate(writer.Token)
	wantCode(t, err, wire.CodeUnauthorized)
	if _, err := a.Tokens().Authenticate(reader.Token); err != nil {
		t.Errorf("the other token stopped working: %v", err)
	}
	wantCode(t, a.Tokens().Revoke(ctx, writer.ID), wire.CodeNotFound)
	closeAgent(t, a, time.Second)
	a = openAgent(t, cfg, nil)
	_, err = a.Tokens().Authenticate(writer.Token)
	wantCode(t, err, wire.CodeUnauthorized)
	if list, _ := a.Tokens().List(); len(list) != 1 || list[0].ID != reader.ID {
		t.Errorf("tokens after revoke and reopen = %+v, want only %s", list, reader.ID)
	}
}
