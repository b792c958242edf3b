//go:build grpc

package grpcapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/synapse-edge/synapse/internal/testutil"
	pb "github.com/synapse-edge/synapse/proto"
	"github.com/synapse-edge/synapse/wire"
)

// TestAgentsSameOverRESTAndGRPC: ListAgents and QueryAgent answer the
// same fields with the same values over REST (GET /agents, GET
// /agents/{agent_id}) and gRPC (seed 003 §4.3), both ways: each REST
// key is a gRPC field or in details_json, each gRPC field a REST key.
func TestAgentsSameOverRESTAndGRPC(t *testing.T) {
	a := startNode(t, "alpha")
	b := startNode(t, "beta")
	a.pair(t, b)
	bID := b.a.Identity().AgentID
	cc := a.caps()
	testutil.Eventually(t, pollTimeout, "beta's capabilities learnt at pairing", func() bool {
		r := a.rest(t, "GET", "/agents/"+url.PathEscape(bID), adminToken, nil)
		return r.status == http.StatusOK && r.object(t)["agent_capabilities"] != nil
	})

	// same checks that the REST body and the gRPC answer carry the same
	// fields with the same values, both ways (sameShape): the peer's
	// record too, the structured parts (agent_capabilities, interfaces,
	// compliance) in details_json, the whole REST answer.
	same := func(t *testing.T, rest restReply, g proto.Message) {
		t.Helper()
		if rest.status != http.StatusOK {
			t.Fatalf("REST answer %d: %s", rest.status, rest.body)
		}
		sh := shape{doc: "details_json", nested: map[string]shape{"agents": {doc: "details_json"}}}
		if _, list := g.(*pb.ListAgentsResponse); list {
			sh.doc = ""
		}
		sameShape(t, string(g.ProtoReflect().Descriptor().Name()), rest.object(t), g.ProtoReflect(), sh)
	}

	t.Run("ListAgents", func(t *testing.T) {
		g, err := cc.ListAgents(as(t, adminToken), &emptypb.Empty{})
		if err != nil {
			t.Fatal(err)
		}
		if g.GetTotal() != 1 || len(g.GetAgents()) != 1 || len(g.GetAgents()[0].GetCapabilities()) == 0 {
			t.Fatalf("ListAgents = %v, want beta with its task types", g)
		}
		rest := a.rest(t, "GET", "/agents", adminToken, nil)
		same(t, rest, g)
		var list struct {
			Agents []map[string]json.RawMessage `json:"agents"`
		}
		if err := json.Unmarshal(rest.body, &list); err != nil || len(list.Agents) != 1 {
			t.Fatalf("GET /agents: %v %s", err, rest.body)
		}
		for _, f := range []string{"agent_id", "agent_name", "endpoint", "capabilities", "status"} {
			if _, ok := list.Agents[0][f]; !ok {
				t.Errorf("GET /agents lacks agents[0].%s: %s", f, rest.body)
			}
		}
	})

	for _, tt := range []struct{ name, id string }{{"QueryAgent peer", bID}, {"QueryAgent self", a.a.Identity().AgentID}} {
		t.Run(tt.name, func(t *testing.T) {
			g, err := cc.QueryAgent(as(t, adminToken), &pb.QueryAgentRequest{AgentId: tt.id})
			if err != nil {
				t.Fatal(err)
			}
			if g.GetAgentId() != tt.id || len(g.GetSupportedTaskTypes()) == 0 || g.GetProtocolVersion() == "" || g.GetCapabilitiesJson() == "" {
				t.Fatalf("QueryAgent(%s) = %v, want its capabilities", tt.id, g)
			}
			same(t, a.rest(t, "GET", "/agents/"+url.PathEscape(tt.id), adminToken, nil), g)
		})
	}

	t.Run("QueryAgent unknown", func(t *testing.T) {
		_, err := cc.QueryAgent(as(t, adminToken), &pb.QueryAgentRequest{AgentId: "nobody"})
		code, tp := codeOf(err)
		rest := a.rest(t, "GET", "/agents/nobody", adminToken, nil)
		if code != codes.NotFound || tp != wire.CodeNotFound || rest.status != http.StatusNotFound || rest.errorCode(t) != tp {
			t.Errorf("gRPC %v (%s), REST %d %s", code, tp, rest.status, rest.body)
		}
	})
}
