package admincmd_test

import (
	"io"
	"net/http"
	"regexp"
	"testing"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/cli"
	"github.com/synapse-edge/synapse/cli/internal/clitest"
	"github.com/synapse-edge/synapse/client"
)

// TestTokenCreateHelpListsEveryScope: the help of token create names every
// scope a token can be created with, each on a line of its own.
func TestTokenCreateHelpListsEveryScope(t *testing.T) {
	code, out, errOut := clitest.Run(t, "", "token", "create", "--help")
	if code != cli.ExitOK {
		t.Fatalf("token create --help: exit %d, %s", code, errOut)
	}
	if len(auth.KnownScopes) < 10 {
		t.Fatalf("auth.KnownScopes has %d scopes, want the 10 of wire.TokenScopes", len(auth.KnownScopes))
	}
	for _, s := range auth.KnownScopes {
		if !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(string(s)) + `\s{2,}\S`).MatchString(out) {
			t.Errorf("token create --help does not list %s with what it allows:\n%s", s, out)
		}
	}
}

// TestMetricsScope: a token with only the metrics scope reads /metrics
// and nothing else; a tasks:read token still reads /metrics.
func TestMetricsScope(t *testing.T) {
	a := clitest.Agent(t, &synapseBin)
	get := func(tok, path string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("GET", a.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		scope      string
		metrics    int
		tasks      int
		tier1Frame int
	}{
		{"metrics", 200, 403, 403},
		{"tasks:read", 200, 200, 403},
		{"tier1:read", 403, 403, 200},
	} {
		t.Run(tc.scope, func(t *testing.T) {
			tok := clitest.Decode[client.TokenCreated](t, clitest.Must(t, a, "", "token", "create", "scraper", "--scope", tc.scope, "--json")).Token
			code, body := get(tok, "/metrics")
			if code != tc.metrics {
				t.Errorf("GET /metrics = %d, want %d: %s", code, tc.metrics, body)
			}
			if code == 200 && !regexp.MustCompile(`(?m)^synapse_tasks_submitted_total`).MatchString(body) {
				t.Errorf("GET /metrics lacks synapse_tasks_submitted_total:\n%.500s", body)
			}
			if code, body := get(tok, "/api/v1/synapse/tasks"); code != tc.tasks {
				t.Errorf("GET /tasks = %d, want %d: %s", code, tc.tasks, body)
			}
			if code, body := get(tok, "/api/v1/synapse/tier1/routines"); code != tc.tier1Frame {
				t.Errorf("GET /tier1/routines = %d, want %d: %s", code, tc.tier1Frame, body)
			}
		})
	}
}
