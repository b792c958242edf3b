package httpapi_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/handlers"
	"github.com/synapse-edge/synapse/internal/schema"
	"github.com/synapse-edge/synapse/internal/testutil/peernode"
	"github.com/synapse-edge/synapse/wire"
)

// capabilitiesSchema compiles testdata/agent_capabilities.schema.json.
func capabilitiesSchema(t *testing.T) *schema.Schema {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "agent_capabilities.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.Compile(raw)
	if err != nil {
		t.Fatalf("compile the capabilities schema: %v", err)
	}
	return s
}

// validCapabilities fails the test unless doc matches the schema.
func validCapabilities(t *testing.T, s *schema.Schema, doc []byte) {
	t.Helper()
	vs, err := s.Validate(doc)
	if err != nil {
		t.Fatalf("validate: %v", err)
	}
	for _, v := range vs {
		t.Errorf("capabilities do not match seed 000 §2: %s\n%s", v, doc)
	}
}

// keySet lists the keys of a JSON object, and of the objects in its
// arrays as "key[].inner", sorted.
func keySet(t *testing.T, doc []byte) []string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	for k, v := range m {
		set[k] = true
		if arr, ok := v.([]any); ok {
			for _, x := range arr {
				if obj, ok := x.(map[string]any); ok {
					for ik := range obj {
						set[k+"[]."+ik] = true
					}
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestCapabilitiesRoutes(t *testing.T) {
	ts := peerServer(t, peernode.Start(t, peernode.Options{Name: "caps", AdminToken: adminToken,
		Config: []func(*agent.Config){func(c *agent.Config) { c.MaxFileSize = 5 << 20 }},
		HandlerConfig: handlers.Config{Commands: []handlers.Command{{TaskType: "ocr", Command: []string{"cat"}, Description: "Reads text.",
			EstimatedTime: "1s-5s", InputSchema: json.RawMessage(`{"type":"object","required":["image"]}`),
			OutputSchema: json.RawMessage(`{"type":"object"}`)}}}}))
	sch := capabilitiesSchema(t)
	seed, err := os.ReadFile(filepath.Join("testdata", "seed000_capabilities_example.json"))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("the schema takes the seed's example", func(t *testing.T) {
		validCapabilities(t, sch, seed)
		vs, _ := sch.Validate([]byte(`{"agent_id":"x","supportStreaming":true}`))
		if len(vs) == 0 {
			t.Error("the schema takes an object with other field names")
		}
	})

	t.Run("GET /capabilities", func(t *testing.T) {
		r := ts.do(t, "GET", api("/capabilities"), nil, withToken(""))
		r.wantStatus(t, http.StatusOK)
		validCapabilities(t, sch, r.body)
		// input_schema_object (the seed's input_schema text, parsed, in
		// JSON answers only) and protocol_profile (seed 002 §8.2) are this
		// agent's additions.
		want := append(keySet(t, seed), "supported_task_types[].input_schema_object", "protocol_profile")
		sort.Strings(want)
		if got := keySet(t, r.body); !slices.Equal(got, want) {
			t.Errorf("field names = %v\nseed 000 §2.4 plus input_schema_object and protocol_profile: %v", got, want)
		}
		var c wire.AgentCapabilities
		if err := json.Unmarshal(r.body, &c); err != nil {
			t.Fatal(err)
		}
		// No LLM backend: tier 3 only, tp_core.
		if c.MaxFileSize != 5<<20 || c.AgentID != ts.a.Identity().AgentID || !c.SupportStreaming || c.SupportHiL || c.SupportGroups ||
			c.ProtocolProfile != "tp_core" {
			t.Errorf("capabilities = %+v", c)
		}
		var ocr *wire.SupportedTaskType
		for i := range c.SupportedTaskTypes {
			if c.SupportedTaskTypes[i].Type == "ocr" {
				ocr = &c.SupportedTaskTypes[i]
			}
		}
		if ocr == nil || ocr.InputSchema != `{"type":"object","required":["image"]}` || ocr.EstimatedTime != "1s-5s" {
			t.Errorf("ocr declared as %+v", ocr)
		}
	})

	t.Run("GET /capabilities/interfaces", func(t *testing.T) {
		r := ts.do(t, "GET", api("/capabilities/interfaces"), nil, withToken(""))
		r.wantStatus(t, http.StatusOK)
		var l wire.InterfaceList
		if err := json.Unmarshal(r.body, &l); err != nil {
			t.Fatal(err)
		}
		if l.AgentID != ts.a.Identity().AgentID || l.ProtocolVersion != "1.0.0" || !reflect.DeepEqual(l.Interfaces, ts.a.GetSupportedInterfaces()) {
			t.Errorf("interfaces = %+v", l)
		}
		if len(l.Interfaces) != 13 || l.Interfaces[0].Name != "AgentIdentity" || l.Interfaces[0].ComplianceLevel != wire.ComplianceBasic {
			t.Errorf("interfaces of an agent with HTTP and without HiL = %v", l.Interfaces)
		}
	})

	t.Run("GET /capabilities/task-types", func(t *testing.T) {
		r := ts.do(t, "GET", api("/capabilities/task-types/ocr"), nil, withToken(""))
		r.wantStatus(t, http.StatusOK)
		var tt wire.SupportedTaskType
		if err := json.Unmarshal(r.body, &tt); err != nil || tt.Type != "ocr" || tt.OutputSchema != `{"type":"object"}` {
			t.Errorf("ocr = %+v, %v", tt, err)
		}
		e := ts.do(t, "GET", api("/capabilities/task-types/teleport"), nil, withToken("")).
			wantError(t, http.StatusForbidden, wire.CodeCapabilityLacking)
		if d, _ := e["details"].(map[string]any); d["task_type"] != "teleport" {
			t.Errorf("details = %v", e["details"])
		}
	})

	t.Run("compliance of self", func(t *testing.T) {
		ts.do(t, "GET", api("/agents/self/compliance"), nil, withToken("")).wantError(t, http.StatusUnauthorized, wire.CodeUnauthorized)
		r := ts.do(t, "GET", api("/agents/self/compliance"), nil)
		r.wantStatus(t, http.StatusOK)
		var ev wire.ComplianceEvaluation
		if err := json.Unmarshal(r.body, &ev); err != nil {
			t.Fatal(err)
		}
		want := wire.ComplianceEvaluation{AgentID: ts.a.Identity().AgentID, BasicImplemented: 8, BasicRequired: 8,
			CompleteImplemented: 4, CompleteTotal: 5, AdvancedImplemented: 1, AdvancedTotal: 5, Compliant: true}
		if !reflect.DeepEqual(ev, want) {
			t.Errorf("compliance = %+v, want %+v", ev, want)
		}
	})

	t.Run("compliance of peers", func(t *testing.T) {
		peer := startPeerServer(t, "peer")
		ts.pairWith(t, peer)
		id := peer.a.Identity().AgentID
		r := ts.do(t, "GET", api("/agents/"+id+"/compliance"), nil)
		r.wantStatus(t, http.StatusOK)
		var ev wire.ComplianceEvaluation
		if err := json.Unmarshal(r.body, &ev); err != nil || ev.AgentID != id || !ev.Compliant {
			t.Errorf("compliance of the peer = %s", r.body)
		}
		ts.do(t, "GET", api("/agents/nobody/compliance"), nil).wantError(t, http.StatusNotFound, wire.CodeNotFound)
		peer.stop()
		ts.do(t, "GET", api("/agents/"+id+"/compliance"), nil).wantError(t, http.StatusBadGateway, wire.CodePeerUnreachable)
	})
}
