//go:build grpc

package cli_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/synapse-edge/synapse/cli"
	"github.com/synapse-edge/synapse/internal/tlscert"
	pb "github.com/synapse-edge/synapse/proto"
)

// clientCA issues client certificates for the mTLS tests.
type clientCA struct {
	t    *testing.T
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newClientCA(t *testing.T, name string) *clientCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &clientCA{t: t, cert: cert, key: key}
}

// file writes the CA certificate as PEM into dir.
func (ca *clientCA) file(dir string) string {
	p := filepath.Join(dir, "client-ca.crt")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}), 0o600); err != nil {
		ca.t.Fatal(err)
	}
	return p
}

// client issues a client certificate for the common name cn.
func (ca *clientCA) client(cn string) tls.Certificate {
	ca.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		ca.t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// grpcTLSAgent is synapse serve with a "tls" section and --grpc-listen.
type grpcTLSAgent struct {
	t    *testing.T
	addr string
	pool *x509.CertPool // trusts the agent's self-signed certificate
}

// serveGRPCTLS starts serve with the tls section's extra fields beside a
// self-signed cert_file and key_file, and waits until its gRPC listener
// answers a client with cert.
func serveGRPCTLS(t *testing.T, extra string, cert tls.Certificate) *grpcTLSAgent {
	t.Helper()
	dir := t.TempDir()
	leaf, err := tlscert.Generate(dir, []string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.json")
	body := `{"tls": {"cert_file": "agent.crt", "key_file": "agent.key", ` + extra + `}}`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	g := &grpcTLSAgent{t: t, addr: freePort(t), pool: x509.NewCertPool()}
	g.pool.AddCert(leaf)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"serve", "--data", t.TempDir(), "--listen", freePort(t), "--grpc-listen", g.addr, "--config", cfg},
			strings.NewReader(""), &out, &errb)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d\nstderr:\n%s", code, errb.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop after its context was cancelled")
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		conn := g.dial(&cert)
		cctx, ccancel := context.WithTimeout(ctx, time.Second)
		_, err := pb.NewHealthServiceClient(conn).HealthCheck(cctx, &emptypb.Empty{}, grpc.WaitForReady(true))
		ccancel()
		conn.Close()
		if err == nil {
			return g
		}
		if time.Now().After(deadline) {
			t.Fatalf("gRPC over TLS on %s: %v\nstderr:\n%s", g.addr, err, errb.String())
		}
	}
}

// dial connects a TLS gRPC client presenting cert (none when nil)
// whatever CAs the server names.
func (g *grpcTLSAgent) dial(cert *tls.Certificate) *grpc.ClientConn {
	g.t.Helper()
	cfg := &tls.Config{RootCAs: g.pool}
	if cert != nil {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	conn, err := grpc.NewClient(g.addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		g.t.Fatal(err)
	}
	return conn
}

// calls lists tasks (tasks:read) and submits one (tasks:write) with cert
// and token (either may be empty) and returns the two codes and the
// submission's error message.
func (g *grpcTLSAgent) calls(cert *tls.Certificate, token string) (list, submit codes.Code, msg string) {
	g.t.Helper()
	conn := g.dial(cert)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	tc := pb.NewTaskServiceClient(conn)
	_, err := tc.ListTasks(ctx, &pb.ListTasksRequest{})
	list = status.Code(err)
	_, err = tc.SubmitTask(ctx, &pb.SubmitTaskRequest{TaskType: "echo", PayloadJson: `{"via":"grpc"}`})
	return list, status.Code(err), status.Convert(err).Message()
}

// TestServeGRPCClientCerts: the tls section's client CA, client_auth and
// clients apply to the gRPC listener as to the HTTP API. A mapped
// certificate gets exactly its scopes without a token, an unmapped or
// absent one gets none, one of another CA fails the handshake, a token
// beside a certificate is judged as a token; with client_auth require a
// client without a certificate is refused at the handshake.
func TestServeGRPCClientCerts(t *testing.T) {
	const token = "grpc-mtls-admin-token-0123456789abcdef"
	t.Setenv("SYNAPSE_ADMIN_TOKEN", token)
	ca := newClientCA(t, "fleet CA")
	caFile := ca.file(t.TempDir())
	plc := ca.client("plc-7")
	stranger := ca.client("stranger")
	foreign := newClientCA(t, "another CA").client("plc-7")
	clients := fmt.Sprintf(`"client_ca_file": %q, "clients": [{"subject": "plc-7", "name": "plc-7", "scopes": ["tasks:read"]}]`, caFile)

	t.Run("request", func(t *testing.T) {
		g := serveGRPCTLS(t, clients+`, "client_auth": "request"`, plc)
		for _, tc := range []struct {
			name         string
			cert         *tls.Certificate
			token        string
			list, submit codes.Code
			msg          string
		}{
			{"mapped certificate", &plc, "", codes.OK, codes.PermissionDenied, "client certificate (plc-7)"},
			{"no certificate", nil, "", codes.Unauthenticated, codes.Unauthenticated, "missing authorization"},
			{"unmapped certificate", &stranger, "", codes.Unauthenticated, codes.Unauthenticated, "missing authorization"},
			{"certificate and token", &plc, token, codes.OK, codes.OK, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				list, submit, msg := g.calls(tc.cert, tc.token)
				if list != tc.list || submit != tc.submit || !strings.Contains(msg, tc.msg) {
					t.Errorf("ListTasks %v, SubmitTask %v %q; want %v, %v naming %q", list, submit, msg, tc.list, tc.submit, tc.msg)
				}
			})
		}
		t.Run("certificate of another CA", func(t *testing.T) {
			if list, _, _ := g.calls(&foreign, ""); list != codes.Unavailable {
				t.Errorf("ListTasks with a certificate of another CA: %v, want Unavailable (the handshake fails)", list)
			}
		})
	})
	t.Run("require", func(t *testing.T) {
		g := serveGRPCTLS(t, clients+`, "client_auth": "require"`, plc)
		if list, _, _ := g.calls(nil, token); list != codes.Unavailable {
			t.Errorf("ListTasks without a certificate, with a token: %v, want Unavailable (refused at the handshake)", list)
		}
		if list, submit, _ := g.calls(&plc, ""); list != codes.OK || submit != codes.PermissionDenied {
			t.Errorf("mapped certificate: ListTasks %v, SubmitTask %v; want OK, PermissionDenied", list, submit)
		}
	})
}
