//go:build grpc

package cli_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/synapse-edge/synapse/cli"
	"github.com/synapse-edge/synapse/internal/tlscert"
	pb "github.com/synapse-edge/synapse/proto"
)

// TestServeGRPCTLS: the "tls" section applies to the gRPC listener too: a
// TLS client trusting the certificate gets HealthCheck over h2, a
// plaintext client does not.
func TestServeGRPCTLS(t *testing.T) {
	t.Setenv("SYNAPSE_ADMIN_TOKEN", "")
	dir := t.TempDir()
	cert, err := tlscert.Generate(dir, []string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, []byte(`{"tls": {"cert_file": "agent.crt", "key_file": "agent.key"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	grpcAddr := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"serve", "--data", t.TempDir(), "--listen", freePort(t), "--grpc-listen", grpcAddr, "--config", cfg},
			strings.NewReader(""), &out, &errb)
	}()
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool})))
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
			if got.GetStatus() != "SERVING" {
				t.Errorf("HealthCheck = %+v, want SERVING", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("HealthCheck over TLS on %s: %v\nstderr:\n%s", grpcAddr, err, errb.String())
		}
	}
	plain, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
	_, err = pb.NewHealthServiceClient(plain).HealthCheck(cctx, &emptypb.Empty{})
	ccancel()
	if err == nil {
		t.Error("a plaintext gRPC client was served on the TLS listener")
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
