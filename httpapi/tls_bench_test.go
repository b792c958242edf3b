package httpapi_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/tlscert"
	"github.com/synapse-edge/synapse/wire"
)

// benchTLS builds the server and client TLS configs of a self-signed
// certificate for 127.0.0.1 (ECDSA P-256, as synapse cert init makes).
func benchTLS(b *testing.B) (srv, client *tls.Config) {
	b.Helper()
	dir := b.TempDir()
	cert, err := tlscert.Generate(dir, []string{"127.0.0.1"}, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	ts, err := tlscert.NewServer(&tlscert.Config{CertFile: filepath.Join(dir, tlscert.CertName), KeyFile: filepath.Join(dir, tlscert.KeyName)},
		slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return ts.TLS, &tls.Config{RootCAs: pool}
}

// BenchmarkTLS is the cost of TLS beside plain HTTP in the same run: the
// durable echo round trip (keep-alive connections, so one handshake per
// client) at 1 and 16 clients, and new connections per second (a GET
// /health on a fresh connection each: one TCP and, over TLS, one full
// handshake, TLS 1.3 with X25519 and an ECDSA P-256 certificate).
func BenchmarkTLS(b *testing.B) {
	body := benchBodies(b)["json"]
	for _, mode := range []string{"plain", "tls"} {
		setup := func(b *testing.B) *benchServer {
			if mode == "plain" {
				return startBenchServer(b)
			}
			srv, client := benchTLS(b)
			return startBenchServerTLS(b, srv, client)
		}
		for _, clients := range []int{1, 16} {
			b.Run(fmt.Sprintf("roundtrip/%s/c=%d", mode, clients), func(b *testing.B) {
				s := setup(b)
				b.ResetTimer()
				elapsed, err := s.run(wire.JSON, body, b.N, clients, 0, nil)
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "rt/s")
			})
		}
		for _, clients := range []int{1, 16} {
			b.Run(fmt.Sprintf("handshake/%s/c=%d", mode, clients), func(b *testing.B) {
				s := setup(b)
				tr := s.hc.Transport.(*http.Transport).Clone()
				tr.DisableKeepAlives = true
				hc := &http.Client{Timeout: 30 * time.Second, Transport: tr}
				var next atomic.Int64
				var wg sync.WaitGroup
				errs := make(chan error, clients)
				b.ResetTimer()
				start := time.Now()
				for range clients {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for next.Add(1) <= int64(b.N) {
							resp, err := hc.Get(s.base + wire.APIPrefix + "/health")
							if err != nil {
								errs <- err
								return
							}
							resp.Body.Close()
							if resp.StatusCode != http.StatusOK {
								errs <- fmt.Errorf("health: %d", resp.StatusCode)
								return
							}
						}
					}()
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				close(errs)
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "conns/s")
			})
		}
	}
}
