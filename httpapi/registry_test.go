package httpapi_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

// craftRegistration signs a registration of agent id with key priv, its
// payload in JSON; lacking names basic interfaces to leave out.
func craftRegistration(t *testing.T, id string, priv ed25519.PrivateKey, lacking ...string) *wire.UnifiedSynapseMessage {
	t.Helper()
	return craftRegistrationIn(t, wire.NewJSONPayload, id, priv, lacking...)
}

// craftRegistrationIn is craftRegistration with the payload encoded by
// newPayload.
func craftRegistrationIn(t *testing.T, newPayload func(any) (wire.RawPayload, error), id string, priv ed25519.PrivateKey, lacking ...string) *wire.UnifiedSynapseMessage {
	t.Helper()
	var ifaces []wire.ImplementedInterface
	for _, i := range wire.StandardInterfaces {
		if !slices.Contains(lacking, i.Name) {
			ifaces = append(ifaces, i)
		}
	}
	caps := wire.DefaultAgentCapabilities()
	caps.SupportedTaskTypes = []wire.SupportedTaskType{{Type: "ocr", Name: "OCR", Capabilities: []string{"imaging"}}}
	reg := wire.Registration{
		Identity: wire.Identity{AgentID: id, PublicKey: base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey)),
			Endpoint: "http://127.0.0.1:9", ProtocolVersion: "1.0.0"},
		Capabilities: caps, Interfaces: ifaces, HeartbeatIntervalSeconds: 5,
	}
	pl, err := newPayload(&reg)
	if err != nil {
		t.Fatal(err)
	}
	m := wire.NewMessage(wire.MsgRegistryRegister, wire.AgentRef{AgentID: id}, wire.AgentRef{}, pl, time.Now())
	if err := wire.Sign(m, priv); err != nil {
		t.Fatal(err)
	}
	return m
}

func newKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

// directoryIDs decodes {"agents":[...]} into agent ids.
func directoryIDs(t *testing.T, r *reply) []string {
	t.Helper()
	r.wantStatus(t, http.StatusOK)
	var out struct {
		Agents []struct {
			AgentID string `json:"agent_id"`
			Status  string `json:"status"`
		} `json:"agents"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil || out.Agents == nil {
		t.Fatalf("not a list of agents: %v: %s", err, r.body)
	}
	ids := []string{}
	for _, a := range out.Agents {
		ids = append(ids, a.AgentID)
	}
	return ids
}

func TestRegistryRoutes(t *testing.T) {
	ts := startPeerServer(t, "registry")
	ctx := t.Context()
	writer, err := ts.a.Tokens().Create(ctx, "registrants", []auth.Scope{auth.ScopeRegistryWrite})
	if err != nil {
		t.Fatal(err)
	}
	reader, err := ts.a.Tokens().Create(ctx, "reader", []auth.Scope{auth.ScopeTasksRead})
	if err != nil {
		t.Fatal(err)
	}
	key := newKey(t)
	post := func(m *wire.UnifiedSynapseMessage, tok string) *reply {
		return ts.do(t, "POST", api("/registry/agents"), envelopeJSON(t, m), withToken(tok))
	}

	t.Run("needs a registry:write token", func(t *testing.T) {
		m := craftRegistration(t, "sys_ocr_1", key)
		post(m, "").wantError(t, http.StatusUnauthorized, wire.CodeUnauthorized)
		post(m, reader.Token).wantError(t, http.StatusForbidden, wire.CodePermissionDenied)
	})

	t.Run("a non-compliant agent is refused with the missing list", func(t *testing.T) {
		e := post(craftRegistration(t, "sys_bad_1", newKey(t), wire.IfaceAuthenticator, wire.IfaceMessageHandler), writer.Token).
			wantError(t, http.StatusUnprocessableEntity, wire.CodeNotCompliant)
		d, _ := e["details"].(map[string]any)
		got, _ := json.Marshal(d["missing_basics"])
		if string(got) != `["MessageHandler","Authenticator"]` {
			t.Errorf("details.missing_basics = %s, want [MessageHandler Authenticator]", got)
		}
		if c, _ := d["compliance"].(map[string]any); c["compliant"] != false || c["basic_implemented"] != 6.0 {
			t.Errorf("details.compliance = %v", d["compliance"])
		}
	})

	first := craftRegistration(t, "sys_ocr_1", key)
	t.Run("register, renew, replay", func(t *testing.T) {
		r := post(first, writer.Token)
		r.wantStatus(t, http.StatusCreated)
		if got, want := r.header.Get("Location"), api("/registry/agents/sys_ocr_1"); got != want {
			t.Errorf("Location = %q, want %q", got, want)
		}
		if m := r.object(t); m["created"] != true || m["status"] != "online" || m["offline_at"] == "" {
			t.Errorf("answer = %s", r.body)
		}
		if m := post(first, writer.Token); m.status != http.StatusOK || m.object(t)["duplicate"] != true {
			t.Errorf("replay: %d %s", m.status, m.body)
		}
		// msgpack envelopes are taken too.
		body, err := wire.EncodeEnvelopeMsgpack(craftRegistrationIn(t, wire.NewMsgpackPayload, "sys_ocr_1", key))
		if err != nil {
			t.Fatal(err)
		}
		r = ts.do(t, "POST", api("/registry/agents"), body, withToken(writer.Token), withHeader("Content-Type", wire.ContentMsgpack),
			withHeader("Accept", wire.ContentJSON))
		r.wantStatus(t, http.StatusOK)
		if m := r.object(t); m["created"] != false || m["duplicate"] != nil {
			t.Errorf("renewal = %s", r.body)
		}
	})

	t.Run("another key for a registered id", func(t *testing.T) {
		post(craftRegistration(t, "sys_ocr_1", newKey(t)), writer.Token).wantError(t, http.StatusConflict, wire.CodeInvalidStateChange)
	})

	t.Run("a bad signature", func(t *testing.T) {
		m := craftRegistration(t, "sys_ocr_2", newKey(t))
		m.Signature = base64.StdEncoding.EncodeToString(make([]byte, ed25519.SignatureSize))
		post(m, writer.Token).wantError(t, http.StatusUnauthorized, wire.CodeIDUnknownSender)
	})

	t.Run("the directory", func(t *testing.T) {
		if got := directoryIDs(t, ts.do(t, "GET", api("/registry/agents"), nil, withToken(reader.Token))); !slices.Equal(got, []string{"sys_ocr_1"}) {
			t.Errorf("GET /registry/agents = %v", got)
		}
		for _, q := range []string{"capability=imaging", "task_type=ocr", "status=online", "capability=ocr&status=online"} {
			if got := directoryIDs(t, ts.do(t, "GET", api("/agents?"+q), nil)); !slices.Equal(got, []string{"sys_ocr_1"}) {
				t.Errorf("GET /agents?%s = %v", q, got)
			}
		}
		for _, q := range []string{"capability=speech", "task_type=echo", "status=offline"} {
			if got := directoryIDs(t, ts.do(t, "GET", api("/registry/agents?"+q), nil)); len(got) != 0 {
				t.Errorf("GET /registry/agents?%s = %v, want none", q, got)
			}
		}
		ts.do(t, "GET", api("/agents?status=asleep"), nil).wantError(t, http.StatusBadRequest, wire.CodeInvalidParams)
		// Without a query, GET /agents lists the paired peers.
		peer := startPeerServer(t, "peer")
		ts.pairWith(t, peer)
		if got := directoryIDs(t, ts.do(t, "GET", api("/agents"), nil)); !slices.Equal(got, []string{peer.a.Identity().AgentID}) {
			t.Errorf("GET /agents = %v, want the paired peer", got)
		}
	})

	t.Run("one entry, and removing it", func(t *testing.T) {
		r := ts.do(t, "GET", api("/registry/agents/sys_ocr_1"), nil)
		r.wantStatus(t, http.StatusOK)
		var e peer.DirectoryEntry
		if err := json.Unmarshal(r.body, &e); err != nil {
			t.Fatal(err)
		}
		if e.Endpoint != "http://127.0.0.1:9" || e.HeartbeatIntervalSeconds != 5 || !e.Compliance.Compliant || len(e.Interfaces) != 18 ||
			e.AgentCapabilities.SupportedTaskTypes[0].Type != "ocr" || !slices.Equal(e.Capabilities, []string{"ocr"}) || e.PublicKey != base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey)) {
			t.Errorf("entry = %s", r.body)
		}
		ts.do(t, "DELETE", api("/registry/agents/sys_ocr_1"), nil, withToken(reader.Token)).wantError(t, http.StatusForbidden, wire.CodePermissionDenied)
		ts.do(t, "DELETE", api("/registry/agents/sys_ocr_1"), nil).wantStatus(t, http.StatusNoContent)
		ts.do(t, "GET", api("/registry/agents/sys_ocr_1"), nil).wantError(t, http.StatusNotFound, wire.CodeNotFound)
		ts.do(t, "DELETE", api("/registry/agents/sys_ocr_1"), nil).wantError(t, http.StatusNotFound, wire.CodeNotFound)
		// The key is no longer pinned.
		post(craftRegistration(t, "sys_ocr_1", newKey(t)), writer.Token).wantStatus(t, http.StatusCreated)
	})
}
