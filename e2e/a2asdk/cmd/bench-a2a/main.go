// Package main is the command bench-a2a. It measures A2A servers with one client, a2a-go v2's
// (JSON-RPC): a blocking SendMessage of the echo task, against Synapse
// (every task fsynced in bbolt before it is answered), a2a-go's server and
// @a2a-js/sdk's server (both in memory), interleaved round by round in one
// run, at each client count. It prints tasks/s (median of the rounds),
// p50/p99 latency (all rounds pooled), then each server's RSS before and
// after -rss-tasks more tasks. Usage (make bench-a2a):
//
//	bench-a2a -synapse bin/synapse -js e2e/a2asdk/js [-rounds 5 -round 2s -clients 1,16 -rss-tasks 100000]
//
// With -serve-ref ADDR it is a2a-go's reference server instead (the
// benchmark runs itself that way, so each server is its own process).
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/synapse-edge/synapse/e2e/a2asdk"
)

func main() {
	var (
		synapse  = flag.String("synapse", "", "the synapse binary (required)")
		jsDir    = flag.String("js", "", "the directory of the JS SDK server (server.mjs, node_modules); empty: leave it out")
		rounds   = flag.Int("rounds", 5, "rounds; each runs every server at every client count")
		round    = flag.Duration("round", 2*time.Second, "how long one server runs at one client count in one round")
		clients  = flag.String("clients", "1,16", "client counts")
		rssTasks = flag.Int("rss-tasks", 100000, "tasks sent to each server before its RSS is read again (0: skip)")
		maxConc  = flag.Int("max-concurrent", 64, "synapse max_concurrent_tasks")
		serveRef = flag.String("serve-ref", "", "serve a2a-go's reference server on this address instead")
		nullAt   = flag.String("serve-null", "", "serve the null server on this address instead")
	)
	flag.Parse()
	if *serveRef != "" {
		serveReference(*serveRef)
		return
	}
	if *nullAt != "" {
		serveNull(*nullAt)
		return
	}
	if *synapse == "" {
		fmt.Fprintln(os.Stderr, "bench-a2a: -synapse is required")
		os.Exit(2)
	}
	var counts []int
	for _, s := range strings.Split(*clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 256 {
			fmt.Fprintf(os.Stderr, "bench-a2a: bad -clients %q\n", *clients)
			os.Exit(2)
		}
		counts = append(counts, n)
	}
	if err := run(*synapse, *jsDir, *rounds, *round, counts, *rssTasks, *maxConc); err != nil {
		fmt.Fprintln(os.Stderr, "bench-a2a:", err)
		os.Exit(1)
	}
}

// server is one server process under test.
type server struct {
	name   string
	cmd    *exec.Cmd
	client *a2aclient.Client
	ctx    context.Context
	// metrics is Synapse's /metrics URL ("" for the others), read with
	// token.
	metrics, token string
}

// commits reads Synapse's store counters: write transactions committed
// (one fsync each) and the seconds spent in them.
func (s *server) commits() (n, secs float64) {
	if s.metrics == "" {
		return 0, 0
	}
	req, err := http.NewRequest(http.MethodGet, s.metrics, nil)
	if err != nil {
		return 0, 0
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0
	}
	defer r.Body.Close()
	sc := bufio.NewScanner(r.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "synapse_store_commits_total":
			n = v
		case "synapse_store_commit_seconds_total":
			secs = v
		}
	}
	return n, secs
}

func (s *server) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
		}
	}
}

// rss reads the process's resident set in MiB: all of it, the anonymous
// part (heaps) and the file-backed part (for Synapse mostly its bbolt
// file, mapped read-only: the kernel's page cache, reclaimable).
func (s *server) rss() string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return "?"
	}
	kib := map[string]int{}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if ok && (k == "VmRSS" || k == "RssAnon" || k == "RssFile") {
			kib[k], _ = strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return fmt.Sprintf("%4d (anon %4d, file %4d)", kib["VmRSS"]/1024, kib["RssAnon"]/1024, kib["RssFile"]/1024)
}

func run(synapseBin, jsDir string, rounds int, round time.Duration, counts []int, rssTasks, maxConc int) error {
	dir, err := os.MkdirTemp("", "bench-a2a-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var servers []*server
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	syn, err := startSynapse(synapseBin, dir, maxConc)
	if err != nil {
		return err
	}
	servers = append(servers, syn)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	null, err := startLine("null", exec.Command(self, "-serve-null", "127.0.0.1:0"), "", "")
	if err != nil {
		return err
	}
	servers = append(servers, null)
	ref, err := startLine("a2a-go", exec.Command(self, "-serve-ref", "127.0.0.1:0"), "", "")
	if err != nil {
		return err
	}
	servers = append(servers, ref)
	if jsDir != "" {
		js, err := startLine("a2a-js", exec.Command("node", "server.mjs", "0"), jsDir, "")
		if err != nil {
			return err
		}
		servers = append(servers, js)
	}
	fmt.Printf("bench-a2a: a2a-go v2.3.1 client (JSON-RPC), blocking SendMessage of the echo task; %d rounds of %s per server and client count, interleaved\n", rounds, round)
	fmt.Printf("null: a server that answers every SendMessage with the same completed task, doing nothing: the client's and loopback's own ceiling\n")
	fmt.Printf("limits: synapse max_concurrent_tasks=%d (default 10; a 429/rate_limited answer counts as an error), fsync on every commit; the others in memory, no limits\n", maxConc)
	for _, s := range servers {
		for range 200 { // warm up
			if err := sendEcho(s); err != nil {
				return fmt.Errorf("%s warm-up: %w", s.name, err)
			}
		}
	}
	type key struct {
		name string
		c    int
	}
	rates := map[key][]float64{}
	commitN, commitSecs, tasksN := map[int]float64{}, map[int]float64{}, map[int]float64{}
	lats := map[key][]time.Duration{}
	errs := map[key]int{}
	for r := range rounds {
		for _, c := range counts {
			order := slices.Clone(servers)
			for i := range r % len(order) { // rotate who goes first
				order = append(order[1:], order[0])
				_ = i
			}
			for _, s := range order {
				n0, s0 := s.commits()
				n, ls, e := load(s, c, round)
				if s.metrics != "" {
					n1, s1 := s.commits()
					commitN[c] += n1 - n0
					commitSecs[c] += s1 - s0
					tasksN[c] += float64(n)
				}
				k := key{s.name, c}
				rates[k] = append(rates[k], float64(n)/round.Seconds())
				lats[k] = append(lats[k], ls...)
				errs[k] += e
			}
		}
	}
	fmt.Printf("\n%-8s %7s %10s %9s %9s %7s %s\n", "server", "clients", "tasks/s", "p50", "p99", "errors", "vs a2a-go")
	for _, c := range counts {
		base := median(rates[key{"a2a-go", c}])
		for _, s := range servers {
			k := key{s.name, c}
			m := median(rates[k])
			p50, p99 := percentile(lats[k], 50), percentile(lats[k], 99)
			fmt.Printf("%-8s %7d %10.0f %9s %9s %7d %8.2fx\n", s.name, c, m, p50.Round(time.Microsecond), p99.Round(time.Microsecond), errs[k], m/base)
		}
	}
	for _, c := range counts {
		if commitN[c] > 0 {
			fmt.Printf("synapse at %d clients: %.0f commits for %.0f tasks (%.2f tasks per fsynced commit), mean commit %.3f ms (fsync included)\n",
				c, commitN[c], tasksN[c], tasksN[c]/commitN[c], 1000*commitSecs[c]/commitN[c])
		}
	}
	if rssTasks > 0 {
		fmt.Printf("\nRSS in MiB (anonymous, file-backed) before and after %d more tasks at 16 clients:\n", rssTasks)
		for _, s := range servers {
			before := s.rss()
			start := time.Now()
			e := sendN(s, 16, rssTasks/2)
			mid := s.rss()
			e += sendN(s, 16, rssTasks-rssTasks/2)
			after := s.rss()
			fmt.Printf("%-8s before %s  after %d: %s  after %d: %s  (%s, %d errors)\n", s.name, before, rssTasks/2, mid, rssTasks, after,
				time.Since(start).Round(time.Second), e)
		}
	}
	return nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func echoRequest() *a2a.SendMessageRequest {
	return &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello"))}
}

func sendEcho(s *server) error {
	res, err := s.client.SendMessage(s.ctx, echoRequest())
	if err != nil {
		return err
	}
	if tk, ok := res.(*a2a.Task); !ok || tk.Status.State != a2a.TaskStateCompleted {
		return fmt.Errorf("answer %T is no completed task", res)
	}
	return nil
}

// load runs c clients for d; it returns the tasks completed, their
// latencies and the errors.
func load(s *server, c int, d time.Duration) (int, []time.Duration, int) {
	deadline := time.Now().Add(d)
	var mu sync.Mutex
	var all []time.Duration
	var errs atomic.Int64
	var wg sync.WaitGroup
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(deadline) {
				t0 := time.Now()
				if err := sendEcho(s); err != nil {
					errs.Add(1)
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return len(all), all, int(errs.Load())
}

// sendN sends n tasks with c clients; it returns the errors.
func sendN(s *server, c, n int) int {
	var next, errs atomic.Int64
	var wg sync.WaitGroup
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				if sendEcho(s) != nil {
					errs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return int(errs.Load())
}

// newClient resolves the card at base and builds the a2a-go client; the
// bearer token, if any, is attached as the card asks.
func newClient(base, token string) (*a2aclient.Client, context.Context, error) {
	ctx := context.Background()
	card, err := agentcard.DefaultResolver.Resolve(ctx, base)
	if err != nil {
		return nil, nil, err
	}
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}}
	creds := a2aclient.NewInMemoryCredentialsStore()
	creds.Set("bench", "bearer", a2aclient.AuthCredential(token))
	c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(hc),
		a2aclient.WithCallInterceptors(&a2aclient.AuthInterceptor{Service: creds}))
	if err != nil {
		return nil, nil, err
	}
	return c, a2aclient.AttachSessionID(ctx, "bench"), nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func startSynapse(bin, dir string, maxConc int) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "synapse.json")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`{"max_concurrent_tasks": %d}`, maxConc)), 0o600); err != nil {
		return nil, err
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	token := hex.EncodeToString(b)
	cmd := exec.Command(bin, "serve", "--data", filepath.Join(dir, "synapse-data"), "--listen", addr, "--config", cfg)
	cmd.Env = append(os.Environ(), "SYNAPSE_ADMIN_TOKEN="+token)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	base := "http://" + addr
	s := &server{name: "synapse", cmd: cmd, metrics: base + "/metrics", token: token}
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := http.Get(base + "/api/v1/synapse/health")
		if err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, errors.New("synapse did not become healthy")
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.client, s.ctx, err = newClient(base, token)
	return s, err
}

// startLine starts a server that prints "listening PORT".
func startLine(name string, cmd *exec.Cmd, dir, _ string) (*server, error) {
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s := &server{name: name, cmd: cmd}
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				port <- p
			}
		}
	}()
	select {
	case p := <-port:
		s.client, s.ctx, err = newClient("http://127.0.0.1:"+p, "")
		return s, err
	case <-time.After(20 * time.Second):
		s.stop()
		return nil, fmt.Errorf("%s did not start", name)
	}
}

// serveReference serves a2a-go's reference server (refagent.go) on addr.
func serveReference(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	base := "http://" + ln.Addr().String()
	fmt.Printf("listening %d\n", ln.Addr().(*net.TCPAddr).Port)
	srv := &http.Server{Handler: a2asdk.RefServer(base), ReadHeaderTimeout: 10 * time.Second}
	_ = srv.Serve(ln)
}

// serveNull answers the card and every JSON-RPC call with one canned
// completed task: what the client and the loopback cost alone.
func serveNull(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	base := "http://" + ln.Addr().String()
	card := []byte(`{"name":"null","description":"null","version":"0","supportedInterfaces":[{"url":"` + base + `/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],` +
		`"capabilities":{},"defaultInputModes":["text/plain"],"defaultOutputModes":["application/json"],"skills":[]}`)
	answer := []byte(`{"jsonrpc":"2.0","id":%s,"result":{"task":{"id":"t","contextId":"t","status":{"state":"TASK_STATE_COMPLETED"},` +
		`"artifacts":[{"artifactId":"result","parts":[{"data":{"text":"hello"}}]}]}}}`)
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(card)
	})
	mux.HandleFunc("/a2a", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, string(answer), req.ID)
	})
	fmt.Printf("listening %d\n", ln.Addr().(*net.TCPAddr).Port)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	_ = srv.Serve(ln)
}
