//go:build grpc

package grpcapi_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/group"
	"github.com/synapse-edge/synapse/grpcapi"
	"github.com/synapse-edge/synapse/internal/testutil/peernode"
	"github.com/synapse-edge/synapse/internal/testutil/tasktest"
	"github.com/synapse-edge/synapse/peer"
	pb "github.com/synapse-edge/synapse/proto"
	"github.com/synapse-edge/synapse/wire"
)

const adminToken = "admin-token"

// pollTimeout bounds every wait for a state; generous for -race.
const pollTimeout = 15 * time.Second

// node is one agent served over REST and gRPC at once, as synapse serve
// --grpc-listen runs it.
type node struct {
	cfg  agent.Config
	a    *agent.Agent
	net  *peer.Network
	gm   *group.Manager
	base string // REST base URL, also the agent's endpoint
	conn *grpc.ClientConn
	grpc *grpcapi.Server
}

type nodeOpt func(*nodeOptions)

type nodeOptions struct {
	noGroups bool
	peer     peer.Options
	config   []func(*agent.Config)
}

// withAgentConfig tweaks the node's agent configuration.
func withAgentConfig(f func(*agent.Config)) nodeOpt {
	return func(o *nodeOptions) { o.config = append(o.config, f) }
}

func withoutGroups(o *nodeOptions) { o.noGroups = true }

// withPeerConfig sets the node's p2p section.
func withPeerConfig(c peer.Config) nodeOpt { return func(o *nodeOptions) { o.peer.Config = &c } }

// startNode opens an agent named name on a fresh directory as a peer node
// (peernode: REST on 127.0.0.1:0, its endpoint, so peers can pair it),
// serves gRPC on another 127.0.0.1:0, and dials the gRPC server.
func startNode(t *testing.T, name string, opts ...nodeOpt) *node {
	t.Helper()
	var o nodeOptions
	for _, f := range opts {
		f(&o)
	}
	pn := peernode.Start(t, peernode.Options{Name: name, AdminToken: adminToken, Groups: !o.noGroups, Peer: o.peer, Config: o.config})
	n := &node{cfg: pn.Config, a: pn.Agent, net: pn.Network, gm: pn.Groups, base: pn.URL()}
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n.grpc = grpcapi.New(n.a, grpcapi.Options{Version: "test", Groups: n.gm, Network: n.net})
	go func() { _ = n.grpc.Serve(gln) }()
	n.conn, err = grpc.NewClient(gln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // before the node's own cleanup, which closes the agent
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = n.conn.Close()
		if err := n.grpc.Shutdown(ctx); err != nil {
			t.Errorf("grpc shutdown: %v", err)
		}
	})
	return n
}

func (n *node) tasks() pb.TaskServiceClient { return pb.NewTaskServiceClient(n.conn) }
func (n *node) messages() pb.SynapseMessageServiceClient {
	return pb.NewSynapseMessageServiceClient(n.conn)
}
func (n *node) caps() pb.CapabilitiesServiceClient { return pb.NewCapabilitiesServiceClient(n.conn) }
func (n *node) groups() pb.GroupServiceClient      { return pb.NewGroupServiceClient(n.conn) }

// token makes a token with the given scopes.
func (n *node) token(t *testing.T, scopes ...auth.Scope) string {
	t.Helper()
	ti, err := n.a.Tokens().Create(context.Background(), "test", scopes)
	if err != nil {
		t.Fatal(err)
	}
	return ti.Token
}

// as returns a context with a deadline whose calls carry tok as bearer
// token ("" for none).
func as(t *testing.T, tok string) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pollTimeout)
	t.Cleanup(cancel)
	if tok != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	}
	return ctx
}

// restReply is a REST answer.
type restReply struct {
	status int
	body   []byte
}

func (r restReply) object(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("answer %d is not a JSON object: %v: %s", r.status, err, r.body)
	}
	return m
}

// errorCode is the TPError code of a REST error answer.
func (r restReply) errorCode(t *testing.T) wire.ErrorCode {
	t.Helper()
	var b struct {
		Error struct {
			Code wire.ErrorCode `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &b); err != nil {
		t.Fatalf("answer %d is not an error body: %s", r.status, r.body)
	}
	return b.Error.Code
}

// rest calls the REST API under /api/v1/synapse with tok ("" for none).
func (n *node) rest(t *testing.T, method, path, tok string, body []byte) restReply {
	t.Helper()
	req, err := http.NewRequest(method, n.base+wire.APIPrefix+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	c := &http.Client{Timeout: pollTimeout}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return restReply{resp.StatusCode, b}
}

// codeOf is the gRPC code of err and the TPError code it carries.
func codeOf(err error) (codes.Code, wire.ErrorCode) {
	return status.Code(err), grpcapi.ErrorCode(err)
}

// waitTask polls GetTask until the task is final.
func (n *node) waitTask(t *testing.T, id string) *pb.TaskStatusResponse {
	t.Helper()
	ctx := as(t, adminToken)
	deadline := time.Now().Add(pollTimeout)
	for time.Now().Before(deadline) {
		r, err := n.tasks().GetTask(ctx, &pb.GetTaskRequest{TaskId: id})
		if err != nil {
			t.Fatalf("GetTask %s: %v", id, err)
		}
		if wire.Status(r.GetStatus()).Terminal() {
			return r
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("task %s not final after %v", id, pollTimeout)
	return nil
}

// agentKey reads the private key an agent keeps in its data directory.
func agentKey(t *testing.T, n *node) ed25519.PrivateKey {
	t.Helper()
	return tasktest.Key(t, n.cfg.DataDir)
}

// envelope builds a signed JSON envelope from one agent to another.
func envelope(t *testing.T, from, to *node, typ wire.MessageType, payload any) (*wire.UnifiedSynapseMessage, []byte) {
	t.Helper()
	var pl wire.RawPayload
	if payload != nil {
		var err error
		if pl, err = wire.NewJSONPayload(payload); err != nil {
			t.Fatal(err)
		}
	}
	id := from.a.Identity()
	m := wire.NewMessage(typ, wire.AgentRef{AgentID: id.AgentID, SystemID: id.SystemID, Endpoint: id.Endpoint},
		wire.AgentRef{AgentID: to.a.Identity().AgentID}, pl, time.Now())
	if err := wire.Sign(m, agentKey(t, from)); err != nil {
		t.Fatal(err)
	}
	b, err := wire.EncodeEnvelopeJSON(m)
	if err != nil {
		t.Fatal(err)
	}
	return m, b
}

// pair makes n pin other (other may then send envelopes to n).
func (n *node) pair(t *testing.T, other *node) {
	t.Helper()
	if _, _, err := n.net.Pairing().AddPeer(context.Background(), other.base); err != nil {
		t.Fatalf("pair %s: %v", other.base, err)
	}
}

// recvUntil reads a stream until match accepts a message or the stream
// ends; it fails on the end.
func recvUntil[T any](t *testing.T, recv func() (T, error), match func(T) bool) T {
	t.Helper()
	for range 10_000 {
		m, err := recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				t.Fatal("stream ended before the expected message")
			}
			t.Fatalf("recv: %v", err)
		}
		if match(m) {
			return m
		}
	}
	t.Fatal("no matching message in 10,000")
	var zero T
	return zero
}
