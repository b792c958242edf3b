package httpapi_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkA2ASend measures the durable echo round trip through the A2A
// binding: a blocking SendMessage (JSON-RPC) on /a2a, next to
// BenchmarkRoundTrip's native POST /task?wait=10 on the same kind of agent.
func BenchmarkA2ASend(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hello"}]}}}`)
	done := []byte(`"TASK_STATE_COMPLETED"`)
	for _, clients := range []int{1, 16} {
		b.Run(fmt.Sprintf("c=%d", clients), func(b *testing.B) {
			s := startBenchServer(b)
			before := storeCounters(b, s)
			var next atomic.Int64
			errs := make(chan error, clients)
			var wg sync.WaitGroup
			b.ResetTimer()
			for range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						req, _ := http.NewRequest(http.MethodPost, s.base+"/a2a", bytes.NewReader(body))
						req.Header.Set("Authorization", "Bearer "+benchToken)
						req.Header.Set("Content-Type", "application/json")
						resp, err := s.hc.Do(req)
						if err != nil {
							errs <- err
							return
						}
						raw, err := io.ReadAll(resp.Body)
						resp.Body.Close()
						if err != nil || !bytes.Contains(raw, done) {
							errs <- fmt.Errorf("answer %s, %v", raw, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			close(errs)
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
			after := storeCounters(b, s)
			if commits := after[0] - before[0]; commits > 0 {
				b.ReportMetric(float64(b.N)/commits, "tasks/commit")
				b.ReportMetric((after[1]-before[1])*1e3/commits, "ms/commit")
			}
		})
	}
}

// storeCounters reads the store's commits and seconds spent committing
// from the agent's /metrics.
func storeCounters(b *testing.B, s *benchServer) [2]float64 {
	b.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+benchToken)
	resp, err := s.hc.Do(req)
	if err != nil {
		b.Fatalf("metrics: %v", err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		b.Fatalf("metrics: %v", err)
	}
	var out [2]float64
	for _, line := range strings.Split(string(raw), "\n") {
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			continue
		}
		switch name {
		case "synapse_store_commits_total":
			out[0] = v
		case "synapse_store_commit_seconds_total":
			out[1] = v
		}
	}
	return out
}
