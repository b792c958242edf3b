package e2e_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
)

// peerView is GET /agents/{id} with what pairing learnt.
type peerView struct {
	Status       string `json:"status"`
	Capabilities *struct {
		SupportedTaskTypes []struct {
			Type string `json:"type"`
		} `json:"supported_task_types"`
	} `json:"agent_capabilities"`
	// The task types again, as seed 003's CapabilitiesResponse lists them.
	TaskTypes  []string `json:"supported_task_types"`
	Interfaces []struct {
		Name string `json:"name"`
	} `json:"interfaces"`
	Compliance *struct {
		Compliant        bool `json:"compliant"`
		BasicImplemented int  `json:"basic_implemented"`
	} `json:"compliance"`
}

func (v peerView) taskTypes() []string {
	var out []string
	if v.Capabilities != nil {
		for _, t := range v.Capabilities.SupportedTaskTypes {
			out = append(out, t.Type)
		}
	}
	return out
}

// TestPeerCapabilitiesAtPairing: pairing reads the peer's capabilities
// and interfaces (seed 000 §1.4, §6.4) and shows them with the
// compliance they give; when the peer comes back after being offline
// with another handler, they are read again.
func TestPeerCapabilitiesAtPairing(t *testing.T) {
	dir := t.TempDir()
	fast := filepath.Join(dir, "fast.json")
	writeJSON(t, fast, map[string]any{"p2p": map[string]any{"heartbeat_interval_seconds": 1}})
	withCat := filepath.Join(dir, "cat.json")
	writeJSON(t, withCat, map[string]any{"p2p": map[string]any{"heartbeat_interval_seconds": 1},
		"handlers": []any{map[string]any{"task_type": "mirror", "command": []string{"cat"}}}})
	a := startAgent(t, agentOpts{args: []string{"--config", fast}})
	b := startAgent(t, agentOpts{args: []string{"--config", fast}})
	bID, _ := identityOf(t, b)
	pairBoth(t, a, b)
	read := func() peerView {
		r := a.call(http.MethodGet, prefix+"/agents/"+bID, nil)
		var v peerView
		if r.status != http.StatusOK || json.Unmarshal(r.body, &v) != nil {
			t.Fatalf("GET /agents/%s: %s", bID, r)
		}
		return v
	}
	var v peerView
	testutil.Eventually(t, 20*time.Second, "the peer's capabilities", func() bool { v = read(); return v.Capabilities != nil })
	if !slices.Contains(v.taskTypes(), "echo") || len(v.Interfaces) < 8 || v.Interfaces[0].Name == "" ||
		v.Compliance == nil || !v.Compliance.Compliant || v.Compliance.BasicImplemented != 8 {
		t.Fatalf("learnt %+v (task types %v), want echo, the interfaces and a compliant evaluation", v, v.taskTypes())
	}
	if !slices.Equal(v.TaskTypes, v.taskTypes()) {
		t.Fatalf("supported_task_types %v, want the task types of agent_capabilities %v", v.TaskTypes, v.taskTypes())
	}
	if slices.Contains(v.taskTypes(), "mirror") {
		t.Fatalf("task types %v before the handler exists", v.taskTypes())
	}

	b.stop()
	testutil.Eventually(t, 20*time.Second, "the peer offline", func() bool { return read().Status == "offline" })
	b.SetArgs("--config", withCat)
	b.start()
	testutil.Eventually(t, 20*time.Second, "the new handler among the peer's task types", func() bool {
		return slices.Contains(read().taskTypes(), "mirror")
	})
}
