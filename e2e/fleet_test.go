package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/transport/mqtt/mqtttest"
)

// The fleet's size: make test runs 12 agents, make bench-fleet 200.
var (
	fleetAgents      = flag.Int("fleet.agents", 12, "TestFleet: agent processes across the three NATS nodes")
	fleetDelegations = flag.Int("fleet.delegations", 120, "TestFleet: delegations between agents on different nodes")
)

// TestFleet runs a fleet of agent processes on a three-node NATS cluster
// with MQTT (Debian's nats-server; the MQTT streams replicated on every
// node), agent i on node i%3 with the other two nodes as its fallback
// brokers (mqtt.urls). It measures, and checks:
//   - until every agent's directory holds every agent's card, online;
//   - delegations between agents on different nodes (agent i to i+1,
//     paired over the broker), each completed with its echo, run once;
//   - each agent's heap and anonymous memory with the whole fleet in its
//     directory, against an agent alone under another topic prefix;
//   - a node's kill -9 with delegations in flight to and from the agents
//     on it: those agents connect to another node, every card is still
//     retained, every delegation completes once (nothing acknowledged is
//     lost), and every directory shows the whole fleet online again.
//
// The figures are logged as a table (go test -v; make bench-fleet).
func TestFleet(t *testing.T) {
	n := *fleetAgents
	if n < 3 {
		t.Fatalf("-fleet.agents=%d: a fleet needs an agent on each of the three nodes", n)
	}
	cluster := mqtttest.StartCluster(t, mqtttest.ClusterOptions{Nodes: 3})
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("fleet-%03d", i)
	}
	config := func(id, prefix string, node int) string {
		urls := []string{}
		for k := 1; k < 3; k++ {
			urls = append(urls, cluster.Nodes[(node+k)%3].URL())
		}
		mq := map[string]any{"url": cluster.Nodes[node].URL(), "urls": urls, "max_reconnect_ms": 500,
			"keepalive_seconds": 5, "answer_timeout_ms": 5000}
		if prefix != "" {
			mq["topic_prefix"] = prefix
		}
		cfg := filepath.Join(t.TempDir(), id+".json")
		writeJSON(t, cfg, map[string]any{
			"agent_id": id, "system_id": "fleet", "endpoint": "mqtt:///" + id, "mqtt": mq,
			"p2p": map[string]any{"retry_base_delay_ms": 200, "max_retries": 30},
		})
		return cfg
	}

	// Start the fleet, a few at a time.
	agents := make([]*agentProc, n)
	began := time.Now()
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range agents {
		cfg := config(ids[i], "", i%3)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			agents[i] = startAgent(t, agentOpts{args: []string{"--config", cfg}}) // another port if the one chosen was taken
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	allUp := time.Now()
	fullAt := waitDirectories(t, agents, n, time.Minute+time.Duration(n)*time.Second)
	t.Logf("fleet of %d: processes up %s after the first start; every directory full and online %s after the last start",
		n, allUp.Sub(began).Round(time.Millisecond), fullAt.Sub(allUp).Round(time.Millisecond))

	// Memory: the fleet's agents against one alone under another prefix.
	alone := startAgent(t, agentOpts{args: []string{"--config", config("fleet-alone", "elsewhere", 0)}})
	waitDirectories(t, []*agentProc{alone}, 1, time.Minute)
	heaps, anons := make([]float64, n), make([]float64, n)
	for i, a := range agents {
		heaps[i], anons[i] = metricValue(t, a, "synapse_go_heap_bytes"), pssAnon(t, a)
	}
	aloneHeap, aloneAnon := metricValue(t, alone, "synapse_go_heap_bytes"), pssAnon(t, alone)
	mh, ma := median(heaps), median(anons)
	// The heap figure moves with the collector's timing; Pss_Anon also
	// holds what pairing and delegating left (both measured before).
	t.Logf("memory, median of the fleet's agents: heap %.0f KiB, Pss_Anon %.0f KiB; alone: heap %.0f KiB, Pss_Anon %.0f KiB; per card beyond the lone agent: %.0f B of heap, %.0f B of Pss_Anon",
		mh/1024, ma/1024, aloneHeap/1024, aloneAnon/1024, (mh-aloneHeap)/float64(n-1), (ma-aloneAnon)/float64(n-1))

	// Pair agent i with agent i+1 (on the next node) over the broker.
	for i := range agents {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			pairOverBroker(t, agents[i], "mqtt:///"+ids[(i+1)%n])
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// ... and agent i+1 accepts agent i, as its operator would.
	for i := range agents {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			b := agents[(i+1)%n]
			if code, out, errOut := runCLI(t, 30*time.Second, "--agent", b.url(), "--token", b.token, "peer", "accept", ids[i]); code != 0 {
				t.Errorf("%s: synapse peer accept %s: exit %d\n%s%s", ids[(i+1)%n], ids[i], code, out, errOut)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// Delegations between nodes, 16 at a time.
	d := *fleetDelegations
	var done, failed atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	work := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hc := newClient(1, 30*time.Second)
			defer hc.CloseIdleConnections()
			for k := range work {
				i := k % n
				body := fmt.Sprintf(`{"task_type":"echo","payload":{"k":%d},"target":"%s"}`, k, ids[(i+1)%n])
				r, err := agents[i].send(context.Background(), hc, http.MethodPost, prefix+"/task?wait=20", []byte(body))
				var v taskView
				switch {
				case err != nil:
					firstErr.CompareAndSwap(nil, err.Error())
				case r.status != http.StatusOK || json.Unmarshal(r.body, &v) != nil || v.Status != "completed" || v.ResultJSON != fmt.Sprintf(`{"k":%d}`, k):
					firstErr.CompareAndSwap(nil, r.String())
				default:
					done.Add(1)
					continue
				}
				failed.Add(1)
			}
		}()
	}
	for k := range d {
		work <- k
	}
	close(work)
	wg.Wait()
	took := time.Since(start)
	if failed.Load() > 0 {
		t.Fatalf("%d of %d delegations failed; the first: %v", failed.Load(), d, firstErr.Load())
	}
	t.Logf("delegations between nodes: %d in %s, %.0f/s (16 at a time, POST /task?wait)", d, took.Round(time.Millisecond), float64(d)/took.Seconds())

	// A node's kill -9 with delegations in flight to and from its agents.
	type sent struct {
		from, k int
		id      string
	}
	var inflight []sent
	for i := range agents {
		if i%3 == 0 || (i+1)%n%3 == 0 {
			k := d + i
			_, id := agents[i].submit(http.StatusCreated, fmt.Sprintf(`{"task_type":"echo","payload":{"k":%d},"target":"%s"}`, k, ids[(i+1)%n]))
			inflight = append(inflight, sent{i, k, id})
		}
	}
	connects := make([]float64, n)
	for i := 0; i < n; i += 3 {
		connects[i] = metricValue(t, agents[i], "synapse_mqtt_connects_total")
	}
	killed := time.Now()
	cluster.Nodes[0].Kill()
	var reconnected time.Time
	for deadline := time.Now().Add(5 * time.Minute); ; {
		back := 0
		for i := 0; i < n; i += 3 {
			if metricValue(t, agents[i], "synapse_mqtt_connects_total") > connects[i] {
				back++
			}
		}
		if back == (n+2)/3 {
			reconnected = time.Now()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after node n1's kill -9, %d of %d of its agents reconnected within 5 min", back, (n+2)/3)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, s := range inflight {
		v := agents[s.from].waitTask(s.id, 5*time.Minute, "completed", taskView.terminal)
		if v.Status != "completed" || v.ResultJSON != fmt.Sprintf(`{"k":%d}`, s.k) {
			t.Errorf("delegation %d from %s across the node's kill: %s %q", s.k, ids[s.from], v.Status, v.ResultJSON)
		}
		if runs := executions(agents[(s.from+1)%n].task(s.id)); runs != 1 {
			t.Errorf("delegation %d ran %d times on %s", s.k, runs, ids[(s.from+1)%n])
		}
	}
	completed := time.Now()
	present := waitDirectories(t, agents, n, 5*time.Minute)
	t.Logf("node n1 killed (kill -9) with %d delegations in flight to and from its %d agents: all reconnected to another node in %s, every delegation completed once in %s, every directory full and online in %s",
		len(inflight), (n+2)/3, reconnected.Sub(killed).Round(time.Millisecond), completed.Sub(killed).Round(time.Millisecond), present.Sub(killed).Round(time.Millisecond))
}

// waitDirectories polls every agent's /metrics until its MQTT directory
// holds want agents, all online, and returns when that held for all.
func waitDirectories(t *testing.T, agents []*agentProc, want int, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	pending := slices.Clone(agents)
	for {
		var still []*agentProc
		for _, a := range pending {
			m := metrics(t, a)
			if m["synapse_mqtt_directory_agents"] != float64(want) || m["synapse_mqtt_directory_online"] != float64(want) {
				still = append(still, a)
			}
		}
		if pending = still; len(pending) == 0 {
			return time.Now()
		}
		if time.Now().After(deadline) {
			var held []string
			for _, a := range pending {
				m := metrics(t, a)
				var dir struct {
					Agents []struct {
						AgentID string `json:"agent_id"`
					} `json:"agents"`
				}
				_ = json.Unmarshal(a.call(http.MethodGet, prefix+"/registry/agents", nil).body, &dir)
				var has []string
				for _, e := range dir.Agents {
					has = append(has, e.AgentID)
				}
				held = append(held, fmt.Sprintf("%s %v/%v %v", a.url(), m["synapse_mqtt_directory_agents"], m["synapse_mqtt_directory_online"], has))
			}
			t.Fatalf("after %s, %d agents' directories are not full (want %d agents online): they hold (agents/online):\n%s",
				timeout, len(pending), want, strings.Join(held, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// metrics reads the unlabelled series of the agent's /metrics.
func metrics(t *testing.T, a *agentProc) map[string]float64 {
	t.Helper()
	r := a.call(http.MethodGet, "/metrics", nil)
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if ok && !strings.HasPrefix(name, "#") && !strings.Contains(name, "{") {
			out[name], _ = strconv.ParseFloat(v, 64)
		}
	}
	return out
}

// executions counts the times a task entered executing.
func executions(v taskView) int {
	runs := 0
	for _, h := range v.History {
		if h.Status == "executing" {
			runs++
		}
	}
	return runs
}

// pssAnon is the agent process's anonymous memory (Pss_Anon).
func pssAnon(t *testing.T, a *agentProc) float64 {
	t.Helper()
	m, err := smapsRollup(a.pid())
	if err != nil {
		t.Fatal(err)
	}
	return float64(m["Pss_Anon"])
}

// median of xs (xs is sorted in place).
func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}
