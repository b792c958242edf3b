//go:build grpc

package grpcapi_test

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/synapse-edge/synapse/grpcapi"
	"github.com/synapse-edge/synapse/internal/testutil"
	pb "github.com/synapse-edge/synapse/proto"
	"github.com/synapse-edge/synapse/wire"
)

// TestCreateGroupIdempotency: CreateGroup with idempotency_key (seed 003
// §5.3) creates one group for two identical calls and refuses the key
// for another request; REST POST /group honours the body field alike.
func TestCreateGroupIdempotency(t *testing.T) {
	n := startNode(t, "owner")
	ctx := as(t, adminToken)
	req := &pb.CreateGroupRequest{Name: "once", IdempotencyKey: "create-once"}
	first, err := n.groups().CreateGroup(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := n.groups().CreateGroup(ctx, req)
	if err != nil || again.GetGroupId() != first.GetGroupId() || again.GetGroupJson() != first.GetGroupJson() {
		t.Errorf("repeated CreateGroup = %+v, %v; want the first answer %+v", again, err, first)
	}
	_, err = n.groups().CreateGroup(ctx, &pb.CreateGroupRequest{Name: "other", IdempotencyKey: "create-once"})
	if _, code := codeOf(err); code != wire.CodeIdempotencyMismatch {
		t.Errorf("another request with the key: %v, want %s", err, wire.CodeIdempotencyMismatch)
	}
	body := []byte(`{"name":"rest-once","idempotency_key":"rest-key"}`)
	r1 := n.rest(t, "POST", "/group", adminToken, body)
	r2 := n.rest(t, "POST", "/group", adminToken, body)
	if r1.status != 201 || r2.status != 201 || string(r1.body) != string(r2.body) {
		t.Errorf("REST twice with a body key: %d %s / %d %s, want the same 201", r1.status, r1.body, r2.status, r2.body)
	}
	if r := n.rest(t, "POST", "/group", adminToken, []byte(`{"name":"rest-other","idempotency_key":"rest-key"}`)); r.status != 422 {
		t.Errorf("REST other body, same key: %d %s, want 422", r.status, r.body)
	}
	groups, err := n.gm.Groups()
	if err != nil || len(groups) != 2 {
		t.Errorf("groups = %d, %v; want 2 (one per key)", len(groups), err)
	}
}

// TestKeepaliveSeedClient: a grpc-go client with the seed's keepalive
// options (pings without calls; here every 10 s, grpc-go's floor, for
// the seed's 30 s) stays connected past the point where grpc-go's default
// server policy (5 minutes) sends GOAWAY too_many_pings — shown by the
// same server with that policy injected.
func TestKeepaliveSeedClient(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 35 s for pings")
	}
	n := startNode(t, "keepalive")
	serve := func(t *testing.T, minTime time.Duration) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := grpcapi.New(n.a, grpcapi.Options{Version: "test", KeepaliveMinTime: minTime, Network: n.net})
		go func() { _ = s.Serve(ln) }()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = s.Shutdown(ctx)
		})
		return ln.Addr().String()
	}
	// watch dials addr like the seed's client, makes one call and reports
	// whether the connection left READY within d.
	watch := func(t *testing.T, addr string, d time.Duration) bool {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 10 * time.Second, PermitWithoutStream: true}))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		if _, err := pb.NewHealthServiceClient(conn).HealthCheck(ctx, &emptypb.Empty{}); err != nil {
			t.Fatal(err)
		}
		if st := conn.GetState(); st != connectivity.Ready {
			t.Fatalf("state after a call = %v", st)
		}
		return conn.WaitForStateChange(ctx, connectivity.Ready) // false: still READY at the deadline
	}
	const hold = 35 * time.Second // the default policy's third strike comes at about 30 s
	t.Run("seed client stays connected", func(t *testing.T) {
		t.Parallel()
		if watch(t, serve(t, 0), hold) {
			t.Error("the connection left READY: the server refused the seed's pings")
		}
	})
	t.Run("grpc-go's default policy drops it", func(t *testing.T) {
		t.Parallel()
		if !watch(t, serve(t, 5*time.Minute), hold) {
			t.Error("the connection stayed READY under a 5-minute policy: the test cannot see a refusal")
		}
	})
}

// TestHealthFollowsAgent: once the agent cannot serve (here it has been
// closed; a failing store is the other cause, agent.Serving), both the
// HealthCheck RPC and grpc.health.v1 say NOT_SERVING while the gRPC server
// still answers.
func TestHealthFollowsAgent(t *testing.T) {
	n := startNode(t, "health-follows")
	ctx := as(t, "")
	hc := grpc_health_v1.NewHealthClient(n.conn)
	if got, err := hc.Check(ctx, &grpc_health_v1.HealthCheckRequest{}); err != nil || got.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
		t.Fatalf("Check = %v, %v", got.GetStatus(), err)
	}
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.a.Close(cctx); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, pollTimeout, "grpc.health.v1 NOT_SERVING", func() bool {
		got, err := hc.Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: "synapse.v1.TaskService"})
		return err == nil && got.GetStatus() == grpc_health_v1.HealthCheckResponse_NOT_SERVING
	})
	if got, err := pb.NewHealthServiceClient(n.conn).HealthCheck(ctx, &emptypb.Empty{}); err != nil || got.GetStatus() != "NOT_SERVING" {
		t.Errorf("HealthCheck = %+v, %v", got, err)
	}
}
