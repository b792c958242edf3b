package e2e_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
)

// registered reads GET /agents?query on a (the directory) and returns the
// status of agent id, "" when it is not listed.
func registered(t *testing.T, a *agentProc, query, id string) string {
	t.Helper()
	r := a.call(http.MethodGet, prefix+"/agents?"+query, nil)
	var list struct {
		Agents []struct {
			AgentID  string `json:"agent_id"`
			Status   string `json:"status"`
			Endpoint string `json:"endpoint"`
		} `json:"agents"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &list) != nil {
		t.Fatalf("GET /agents?%s: %s", query, r)
	}
	for _, e := range list.Agents {
		if e.AgentID == id {
			if e.Status == "" || e.Endpoint == "" {
				t.Fatalf("entry of %s has no status or endpoint: %s", id, r)
			}
			return e.Status
		}
	}
	return ""
}

// TestRegistryDiscovery runs two agent processes: A is the registry, B
// registers with it on start through its configuration (heartbeat every
// second). A finds B by task type; once B stops, three silent intervals
// later A shows it offline.
func TestRegistryDiscovery(t *testing.T) {
	a := startAgent(t, agentOpts{})
	cfg := filepath.Join(t.TempDir(), "b.json")
	conf := `{"registry":{"url":"` + a.url() + `","token_env":"B_REGISTRY_TOKEN","heartbeat_interval_seconds":1}}`
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startAgent(t, agentOpts{args: []string{"--config", cfg}, env: []string{"B_REGISTRY_TOKEN=" + a.token}})
	idB, _ := identityOf(t, b)
	// A third agent registers too: the directory holds both, and a query
	// by capability (echo's "diagnostics") and task type finds B.
	c := startAgent(t, agentOpts{args: []string{"--config", cfg}, env: []string{"B_REGISTRY_TOKEN=" + a.token}})
	idC, _ := identityOf(t, c)
	testutil.Eventually(t, 15*time.Second, "C online in A's directory", func() bool {
		return registered(t, a, "task_type=sleep", idC) == "online"
	})
	if got := registered(t, a, "capability=diagnostics&task_type=echo", idB); got != "online" {
		t.Errorf("capability=diagnostics&task_type=echo: B is %q", got)
	}

	testutil.Eventually(t, 15*time.Second, "B online in A's directory", func() bool {
		return registered(t, a, "task_type=echo", idB) == "online"
	})
	if got := registered(t, a, "task_type=echo&status=online", idB); got != "online" {
		t.Errorf("task_type=echo&status=online: B is %q", got)
	}
	if got := registered(t, a, "capability=no_such_capability", idB); got != "" {
		t.Errorf("capability=no_such_capability lists B (%s)", got)
	}
	// Without a query, GET /agents lists A's paired peers: none.
	if r := a.call(http.MethodGet, prefix+"/agents", nil); r.status != http.StatusOK || string(r.body) != `{"agents":[],"total":0}` {
		t.Errorf("GET /agents: %s", r)
	}

	b.stop()
	stopped := time.Now()
	testutil.Eventually(t, 15*time.Second, "B offline in A's directory", func() bool {
		return registered(t, a, "task_type=echo&status=offline", idB) == "offline"
	})
	// Offline comes after three intervals of silence, not at once.
	if took := time.Since(stopped); took < 2*time.Second {
		t.Errorf("B went offline %s after it stopped; want about 3 s (three 1 s intervals)", took)
	}
}
