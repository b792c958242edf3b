package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The agent's counters the harness reads before and after each run.
const (
	metricFrames      = "synapse_tier1_frames_total"
	metricCommits     = "synapse_store_commits_total"
	metricWrites      = "synapse_store_writes_total"
	metricCommitSecs  = "synapse_store_commit_seconds_total"
	metricRefused     = "synapse_tier1_refused_batches_total"
	metricsMaxBytes   = 4 << 20
	readyPollInterval = 50 * time.Millisecond
)

// scrapeMetrics reads GET http://addr/metrics and returns the unlabelled
// samples.
func scrapeMetrics(ctx context.Context, addr, token string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, fmt.Errorf("metrics request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("get metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, metricsMaxBytes))
	if err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("get metrics: HTTP %d: %.200s", resp.StatusCode, body)
	}
	return parseMetrics(body), nil
}

// parseMetrics reads the "name value" lines of the Prometheus text format;
// comments and labelled samples are skipped.
func parseMetrics(b []byte) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || strings.ContainsRune(line, '{') {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			out[f[0]] = v
		}
	}
	return out
}

// waitHTTP polls the agent's /metrics until it answers or ctx ends.
func waitHTTP(ctx context.Context, addr, token string) error {
	for {
		_, err := scrapeMetrics(ctx, addr, token)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("agent at %s not ready: %w", addr, err)
		case <-time.After(readyPollInterval):
		}
	}
}

// waitTCP polls addr until it accepts a connection or ctx ends.
func waitTCP(ctx context.Context, addr string) error {
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return c.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w", addr, err)
		case <-time.After(readyPollInterval):
		}
	}
}

// freePorts returns n distinct free TCP ports on 127.0.0.1, all held open
// until every one is chosen.
func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
