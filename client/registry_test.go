package client_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/synapse-edge/synapse/client"
)

// TestDirectoryEntryShapes: a directory entry reads alike in seed 003's
// listing shape (capabilities the task types, agent_capabilities the
// declaration) and in the shape of agents before it (capabilities the
// declaration); a capabilities that is neither is an error.
func TestDirectoryEntryShapes(t *testing.T) {
	decl := `{"agent_id":"gw-1","supported_task_types":[{"type":"scan"},{"type":"echo"}]}`
	for _, c := range []struct{ name, body string }{
		{"seed 003", `{"agent_id":"gw-1","capabilities":["scan","echo"],"agent_capabilities":` + decl + `}`},
		{"before", `{"agent_id":"gw-1","capabilities":` + decl + `}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var e client.DirectoryEntry
			if err := json.Unmarshal([]byte(c.body), &e); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(e.Capabilities, []string{"scan", "echo"}) || e.AgentCapabilities == nil ||
				e.AgentCapabilities.AgentID != "gw-1" || len(e.AgentCapabilities.SupportedTaskTypes) != 2 {
				t.Errorf("%s read as %+v", c.body, e)
			}
		})
	}
	for _, bad := range []string{`{"capabilities":7}`, `{"capabilities":{"supported_task_types":"scan"}}`, `{"capabilities":[1]}`} {
		var e client.DirectoryEntry
		if err := json.Unmarshal([]byte(bad), &e); err == nil {
			t.Errorf("%s read as %+v, want an error", bad, e)
		}
	}
}
