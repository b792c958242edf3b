package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/handlers"
	"github.com/synapse-edge/synapse/httpapi"
	"github.com/synapse-edge/synapse/internal/testutil/tier1test"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

// The benchmarks run an agent with a real data directory (every submit and
// every completion is an fsynced store commit, grouped by the store's
// writer) and a server on a loopback port, driven by net/http clients with
// keep-alive connections. See bench/README.md for how to run and read them.

const (
	benchToken = "bench-token"
	// benchTasksEnv sets the number of tasks of BenchmarkHeapAfterTasks.
	benchTasksEnv      = "SYNAPSE_BENCH_TASKS"
	benchTasksDefault  = 100_000
	benchHeapCheckAt   = 10_000
	benchHeapClients   = 16
	benchMaxConcurrent = 64
)

// benchServer is an agent served on 127.0.0.1:0.
type benchServer struct {
	base  string
	hc    *http.Client
	a     *agent.Agent
	close func() // stops the server and the agent; safe to call twice
}

// checkpoint brings the data file up to date with the commit log (a
// backup checkpoints first), so the bytes a write costs the file are
// counted with it.
func (s *benchServer) checkpoint(b *testing.B) {
	b.Helper()
	if _, err := s.a.Store().Backup(io.Discard, nil); err != nil {
		b.Fatalf("checkpoint: %v", err)
	}
}

func startBenchServer(b *testing.B) *benchServer {
	b.Helper()
	return startBenchServerTLS(b, nil, nil)
}

// startBenchServerTLS is startBenchServer serving TLS with srvTLS (nil:
// plain HTTP), its clients trusting what clientTLS trusts.
func startBenchServerTLS(b *testing.B, srvTLS, clientTLS *tls.Config) *benchServer {
	b.Helper()
	cfg := agent.Defaults()
	cfg.DataDir = b.TempDir()
	cfg.Listen = "127.0.0.1:0"
	cfg.AdminToken = benchToken
	cfg.MaxConcurrentTasks = benchMaxConcurrent
	t1 := tier1test.Service(b, agent.Options{})
	a, err := agent.New(cfg, agent.Options{Tier1: t1})
	if err != nil {
		b.Fatalf("agent.New: %v", err)
	}
	if err := handlers.Register(a, handlers.Options{}); err != nil {
		b.Fatalf("handlers.Register: %v", err)
	}
	nw, err := peer.New(a, peer.Options{})
	if err != nil {
		b.Fatalf("peer.New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Open(ctx); err != nil {
		b.Fatalf("agent.Open: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = a.Close(ctx)
		b.Fatalf("listen: %v", err)
	}
	srv := httpapi.New(a, httpapi.Options{Version: "bench", Network: nw, TLS: srvTLS, Tier1: t1})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	scheme := "http://"
	if srvTLS != nil {
		scheme = "https://"
	}
	s := &benchServer{
		a:    a,
		base: scheme + ln.Addr().String(),
		hc: &http.Client{
			Timeout: 30 * time.Second,
			Transport: &http.Transport{
				MaxIdleConns: 64, MaxIdleConnsPerHost: 64, DisableCompression: true, TLSClientConfig: clientTLS,
			},
		},
	}
	s.close = sync.OnceFunc(func() {
		s.hc.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			b.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			b.Errorf("serve: %v", err)
		}
		if err := a.Close(ctx); err != nil {
			b.Errorf("close agent: %v", err)
		}
	})
	b.Cleanup(s.close)
	return s
}

// benchDone is the part of a TaskStatusResponse the benchmarks check, in
// either codec.
type benchDone struct {
	Status string `json:"status" msgpack:"status"`
}

// roundTrip submits one echo task with ?wait=10 and checks that the answer
// is 200 with the task completed.
func (s *benchServer) roundTrip(codec wire.Codec, body []byte) error {
	req, err := http.NewRequest(http.MethodPost, s.base+wire.APIPrefix+"/task?wait=10", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+benchToken)
	req.Header.Set("Content-Type", codec.ContentType())
	req.Header.Set("Accept", codec.ContentType())
	resp, err := s.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("got %d %s, want 200", resp.StatusCode, raw)
	}
	var done benchDone
	if err := codec.Unmarshal(raw, &done); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	if done.Status != string(wire.StatusCompleted) {
		return fmt.Errorf("got status %q, want completed", done.Status)
	}
	return nil
}

// run performs n round trips with the given number of concurrent clients
// and returns the wall time. after, if not nil, is called by the client
// that completes round trip number at (counting from 1), with the others
// still running.
func (s *benchServer) run(codec wire.Codec, body []byte, n, clients int, at int64, after func()) (time.Duration, error) {
	var next, finished atomic.Int64
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				if err := s.roundTrip(codec, body); err != nil {
					errs <- err
					return
				}
				if finished.Add(1) == at && after != nil {
					after()
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	return elapsed, <-errs
}

// metric reads one sample of GET /metrics.
func (s *benchServer) metric(b *testing.B, name string) float64 {
	b.Helper()
	req, err := http.NewRequest(http.MethodGet, s.base+"/metrics", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+benchToken)
	resp, err := s.hc.Do(req)
	if err != nil {
		b.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				b.Fatalf("metric %s: %v", name, err)
			}
			return f
		}
	}
	b.Fatalf("GET /metrics has no %s", name)
	return 0
}

// commitCounters are the store writer's counters.
type commitCounters struct{ writes, commits float64 }

func (s *benchServer) commits(b *testing.B) commitCounters {
	b.Helper()
	return commitCounters{s.metric(b, "synapse_store_writes_total"), s.metric(b, "synapse_store_commits_total")}
}

// groupCommit is the writes per commit between two readings.
func groupCommit(before, after commitCounters) float64 {
	if after.commits == before.commits {
		return 0
	}
	return (after.writes - before.writes) / (after.commits - before.commits)
}

// benchBodies are the echo submit bodies in each codec.
func benchBodies(b *testing.B) map[string][]byte {
	b.Helper()
	mp, err := wire.Msgpack.Marshal(map[string]any{"task_type": "echo", "payload": map[string]any{"n": 1, "msg": "bench"}})
	if err != nil {
		b.Fatal(err)
	}
	return map[string][]byte{
		"json":    []byte(`{"task_type":"echo","payload":{"n":1,"msg":"bench"}}`),
		"msgpack": mp,
	}
}

// BenchmarkRoundTrip measures the durable echo round trip: POST /task?wait=10
// answered 200 once the task is completed, which is two fsynced commits
// (the submit, and the final state) per task, grouped across clients.
func BenchmarkRoundTrip(b *testing.B) {
	bodies := benchBodies(b)
	for _, name := range []string{"json", "msgpack"} {
		codec := wire.JSON
		if name == "msgpack" {
			codec = wire.Msgpack
		}
		for _, clients := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/c=%d", name, clients), func(b *testing.B) {
				s := startBenchServer(b)
				before, bytes0 := s.commits(b), s.metric(b, "synapse_store_bytes_written_total")
				b.ResetTimer()
				elapsed, err := s.run(codec, bodies[name], b.N, clients, 0, nil)
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "rt/s")
				b.ReportMetric(groupCommit(before, s.commits(b)), "writes/commit")
				// The store's bytes (log and checkpointed pages) per round
				// trip; a checkpoint due after the run is not in it.
				b.ReportMetric((s.metric(b, "synapse_store_bytes_written_total")-bytes0)/float64(b.N), "storeB/op")
			})
		}
	}
}

// BenchmarkHeapAfterTasks runs SYNAPSE_BENCH_TASKS (default 100000) echo
// round trips with 16 clients and reports the Go heap after a GC once
// 10000 have completed (heap-10k-MiB) and at the end (heap-MiB): finished
// tasks live only in the store, so the two should be about the same. One
// op is the whole batch on a fresh agent.
func BenchmarkHeapAfterTasks(b *testing.B) {
	n := benchTasksDefault
	if v := os.Getenv(benchTasksEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("%s=%q: want a positive whole number", benchTasksEnv, v)
		}
	}
	body := benchBodies(b)["json"]
	for range b.N {
		b.StopTimer()
		s := startBenchServer(b)
		before := s.commits(b)
		b.StartTimer()
		heapAt := -1.0
		elapsed, err := s.run(wire.JSON, body, n, benchHeapClients, benchHeapCheckAt, func() { heapAt = heapMiB() })
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if heapAt >= 0 {
			b.ReportMetric(heapAt, "heap-10k-MiB")
		}
		b.ReportMetric(heapMiB(), "heap-MiB")
		b.ReportMetric(float64(n)/elapsed.Seconds(), "rt/s")
		b.ReportMetric(groupCommit(before, s.commits(b)), "writes/commit")
		s.close()
	}
}

// heapMiB is the live Go heap after a collection, in MiB.
func heapMiB() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc) / (1 << 20)
}
