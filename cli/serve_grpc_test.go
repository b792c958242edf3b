//go:build grpc

package cli_test

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/synapse-edge/synapse/cli"
	pb "github.com/synapse-edge/synapse/proto"
)

// freePort returns a loopback address nothing listens on right now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestServeGRPC runs synapse serve --grpc-listen in the grpc build and
// calls HealthCheck on that port.
func TestServeGRPC(t *testing.T) {
	t.Setenv("SYNAPSE_ADMIN_TOKEN", "")
	grpcAddr := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"serve", "--data", t.TempDir(), "--listen", freePort(t), "--grpc-listen", grpcAddr},
			strings.NewReader(""), &out, &errb)
	}()
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc := pb.NewHealthServiceClient(conn)
	deadline := time.Now().Add(15 * time.Second)
	for {
		cctx, ccancel := context.WithTimeout(ctx, time.Second)
		got, err := hc.HealthCheck(cctx, &emptypb.Empty{}, grpc.WaitForReady(true))
		ccancel()
		if err == nil {
			if got.GetStatus() != "SERVING" || got.GetVersion() != cli.Version {
				t.Errorf("HealthCheck = %+v, want SERVING %s", got, cli.Version)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("HealthCheck on %s: %v\nstderr:\n%s", grpcAddr, err, errb.String())
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited %d\nstderr:\n%s", code, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop after its context was cancelled")
	}
}
