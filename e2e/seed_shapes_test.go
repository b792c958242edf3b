package e2e_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
)

// TestSeedRESTShapes drives the REST shapes of the seeds against two real
// agents, as a client written from seed 003 §4 and seed 000 §3 reads them
// (plain JSON, nothing of this module's types): SendMessage, ListAgents,
// QueryAgent, capability_lacking as 403, and every task type with a name
// and an estimated_time (issue 30's rows 5, 6, 8 and 9).
func TestSeedRESTShapes(t *testing.T) {
	a := startAgent(t, agentOpts{})
	// B registers with A too: A's directory lists it (GET /registry/agents).
	cfg := filepath.Join(t.TempDir(), "handlers.json")
	writeJSON(t, cfg, map[string]any{"max_task_duration_seconds": 900,
		"handlers": []any{map[string]any{"task_type": "resize_image", "command": []string{"cat"}}},
		"registry": map[string]any{"url": a.url(), "token_env": "B_REGISTRY_TOKEN", "heartbeat_interval_seconds": 1}})
	b := startAgent(t, agentOpts{args: []string{"--config", cfg}, env: []string{"B_REGISTRY_TOKEN=" + a.token}})
	bID, bKey := identityOf(t, b)
	pairBoth(t, a, b)

	t.Run("ListAgents", func(t *testing.T) {
		var list struct {
			Agents []struct {
				AgentID      string   `json:"agent_id"`
				Endpoint     string   `json:"endpoint"`
				Status       string   `json:"status"`
				Capabilities []string `json:"capabilities"`
			} `json:"agents"`
			Total int `json:"total"`
		}
		testutil.Eventually(t, 20*time.Second, "B's task types in GET /agents", func() bool {
			r := a.call(http.MethodGet, prefix+"/agents", nil)
			return r.status == http.StatusOK && json.Unmarshal(r.body, &list) == nil && len(list.Agents) == 1 &&
				slices.Contains(list.Agents[0].Capabilities, "resize_image")
		})
		if g := list.Agents[0]; list.Total != 1 || g.AgentID != bID || g.Endpoint != b.url() || g.Status == "" {
			t.Errorf("GET /agents = %+v, want B, total 1", list)
		}
	})

	// Every route that lists agents answers ListAgents' shape: the paired
	// peers (GET /agents), the directory queried by capability or task
	// type (GET /agents?capability=), and the directory of the agents
	// registered here (GET /registry/agents): {agents, total}, each
	// agent's capabilities its task types as strings, its whole
	// declaration as agent_capabilities.
	t.Run("ListAgents on every listing route", func(t *testing.T) {
		for _, route := range []string{"/agents", "/agents?capability=resize_image", "/agents?task_type=resize_image",
			"/registry/agents", "/registry/agents?capability=resize_image", "/registry/agents?status=online"} {
			var list struct {
				Agents []struct {
					AgentID           string   `json:"agent_id"`
					Capabilities      []string `json:"capabilities"`
					AgentCapabilities *struct {
						AgentID            string `json:"agent_id"`
						SupportedTaskTypes []struct {
							Type string `json:"type"`
						} `json:"supported_task_types"`
					} `json:"agent_capabilities"`
				} `json:"agents"`
				Total *int `json:"total"`
			}
			var r response
			testutil.Eventually(t, 20*time.Second, "B listed by "+route, func() bool {
				r = a.call(http.MethodGet, prefix+route, nil)
				if r.status != http.StatusOK {
					t.Fatalf("GET %s = %s", route, r)
				}
				if err := json.Unmarshal(r.body, &list); err != nil {
					t.Fatalf("GET %s = %s: %v; want capabilities a list of strings", route, r, err)
				}
				return len(list.Agents) == 1
			})
			g := list.Agents[0]
			if list.Total == nil || *list.Total != 1 || g.AgentID != bID || !slices.Contains(g.Capabilities, "resize_image") {
				t.Errorf("GET %s = %s, want B with its task types, total 1", route, r)
			}
			if g.AgentCapabilities == nil || g.AgentCapabilities.AgentID != bID || len(g.AgentCapabilities.SupportedTaskTypes) != len(g.Capabilities) {
				t.Errorf("GET %s = %s, want B's declaration as agent_capabilities", route, r)
			}
		}
	})

	t.Run("QueryAgent", func(t *testing.T) {
		r := a.call(http.MethodGet, prefix+"/agents/"+url.PathEscape(bID), nil)
		var d struct {
			AgentID            string   `json:"agent_id"`
			ProtocolVersion    string   `json:"protocol_version"`
			SupportedTaskTypes []string `json:"supported_task_types"`
			MaxFileSize        int64    `json:"max_file_size"`
			MaxConcurrentTasks int      `json:"max_concurrent_tasks"`
			SupportStreaming   *bool    `json:"support_streaming"`
			SupportHiL         *bool    `json:"support_hil"`
			SupportGroups      *bool    `json:"support_groups"`
			PublicKey          string   `json:"public_key"`
		}
		if r.status != http.StatusOK || json.Unmarshal(r.body, &d) != nil || d.AgentID != bID || d.ProtocolVersion == "" ||
			!slices.Contains(d.SupportedTaskTypes, "resize_image") || d.MaxFileSize <= 0 || d.MaxConcurrentTasks <= 0 ||
			d.SupportStreaming == nil || d.SupportHiL == nil || d.SupportGroups == nil || d.PublicKey != bKey {
			t.Errorf("GET /agents/%s = %s, want B's CapabilitiesResponse", bID, r)
		}
	})

	t.Run("capability_lacking is 403", func(t *testing.T) {
		r := b.call(http.MethodGet, prefix+"/capabilities/task-types/teleport", nil)
		var e struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if r.status != http.StatusForbidden || json.Unmarshal(r.body, &e) != nil || e.Error.Code != "capability_lacking" {
			t.Errorf("GET /capabilities/task-types/teleport = %s, want 403 capability_lacking", r)
		}
	})

	t.Run("every task type has name and estimated_time", func(t *testing.T) {
		r := b.call(http.MethodGet, prefix+"/capabilities", nil)
		var c struct {
			SupportedTaskTypes []struct {
				Type          string `json:"type"`
				Name          string `json:"name"`
				EstimatedTime string `json:"estimated_time"`
			} `json:"supported_task_types"`
		}
		if r.status != http.StatusOK || json.Unmarshal(r.body, &c) != nil || len(c.SupportedTaskTypes) < 2 {
			t.Fatalf("GET /capabilities = %s", r)
		}
		for _, tt := range c.SupportedTaskTypes {
			if tt.Name == "" || tt.EstimatedTime == "" {
				t.Errorf("task type %s: name %q, estimated_time %q; want both", tt.Type, tt.Name, tt.EstimatedTime)
			}
			if tt.Type == "resize_image" && (tt.Name != "Resize image" || tt.EstimatedTime != "0s-15m") {
				t.Errorf("resize_image: name %q, estimated_time %q; want Resize image, 0s-15m", tt.Name, tt.EstimatedTime)
			}
		}
	})

	t.Run("SendMessage", func(t *testing.T) {
		body := `{"receiver_id":"` + bID + `","content_type":"text","payload_json":"\"hello from A\"","conversation_id":"c-9"}`
		r := a.call(http.MethodPost, prefix+"/message", []byte(body))
		var sent struct {
			MessageID string `json:"message_id"`
			Status    string `json:"status"`
		}
		if r.status != http.StatusAccepted || json.Unmarshal(r.body, &sent) != nil || sent.MessageID == "" || sent.Status != "queued" {
			t.Fatalf("POST /message %s = %s, want 202 {message_id, status}", body, r)
		}
		env := feedMessage(t, b, sent.MessageID, 30*time.Second)
		var m struct {
			MessageType string `json:"message_type"`
			Sender      struct {
				AgentID string `json:"agent_id"`
			} `json:"sender"`
			Payload struct {
				ContentType    string `json:"content_type"`
				Payload        string `json:"payload"`
				ConversationID string `json:"conversation_id"`
			} `json:"payload"`
		}
		aID, _ := identityOf(t, a)
		if json.Unmarshal(env, &m) != nil || m.MessageType != "synapse:message" || m.Sender.AgentID != aID ||
			m.Payload.ContentType != "text" || m.Payload.Payload != "hello from A" || m.Payload.ConversationID != "c-9" {
			t.Errorf("B received %s, want A's message", env)
		}
	})
}

// feedMessage follows b's message feed (GET /messages/callback from the
// start) until the envelope with message_id id, and returns it.
func feedMessage(t *testing.T, b *agentProc, id string, wait time.Duration) []byte {
	t.Helper()
	sc, end := openFeed(t, b, wait)
	defer end()
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var env struct {
			MessageID string `json:"message_id"`
		}
		if json.Unmarshal([]byte(data), &env) == nil && env.MessageID == id {
			return []byte(data)
		}
	}
	t.Fatalf("message %s not on the feed within %v", id, wait)
	return nil
}
