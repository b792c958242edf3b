package a2asdk_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/synapse-edge/synapse/client/agenttest"
	"github.com/synapse-edge/synapse/e2e/a2asdk"
)

// synapseBin is the agent binary TestMain builds from the root module.
var synapseBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "synapse-a2asdk-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	synapseBin, err = BuildSynapse(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// BuildSynapse builds the agent from the root module (agenttest.Build
// finds it through this module's replace directive).
func BuildSynapse(dir string) (string, error) {
	return agenttest.Build(context.Background(), dir)
}

// target is an A2A server under test.
type target struct {
	name  string
	base  string // where the agent card is
	token string // bearer token; "" for none
	// v03URL is the endpoint that speaks v0.3 method names.
	v03URL string
	// known are assertions a reference server is known to fail, with
	// why; they are logged, not asserted, for that server only.
	known map[string]string
}

// differs reports whether the target is known to fail assertion what (and
// logs why).
func (tg *target) differs(t *testing.T, what string) bool {
	t.Helper()
	why, ok := tg.known[what]
	if ok {
		t.Logf("%s: not asserted: %s", tg.name, why)
	}
	return ok
}

// startSynapse runs the agent binary with a config file made of cfg
// (JSON; "" for none).
func startSynapse(t *testing.T, cfg string) *target {
	t.Helper()
	var args []string
	if cfg != "" {
		p := filepath.Join(t.TempDir(), "synapse.json")
		if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		args = []string{"--config", p}
	}
	// The tests' webhooks are on this host: allow loopback targets.
	a := agenttest.Start(t, synapseBin, agenttest.Options{Args: args, Env: []string{"SYNAPSE_OUTBOUND_ALLOW=127.0.0.0/8"}})
	return &target{name: "synapse", base: a.URL, token: a.Token, v03URL: a.URL + "/a2a"}
}

// startRef serves a2a-go's reference server on a loopback port: v1.0 at
// /a2a and, through a2a-go's v0.3 compatibility handler, v0.3 at /a2a03.
func startRef(t *testing.T) *target {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	h := a2asdk.RefServer(base)
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.Handle("/a2a03", a2av0.NewJSONRPCHandler(a2asdk.RefHandler()))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return &target{name: "a2a-go", base: base, v03URL: base + "/a2a03", known: map[string]string{
		"cancel twice":    "it answers the cancelled task again instead of TaskNotCancelable (v1.0: a final task is not cancelable)",
		"subscribe final": "it answers TaskNotFound to a subscription of a final task (v1.0: UnsupportedOperation)",
	}}
}

// client builds the SDK's client from the target's card; the SDK's
// AuthInterceptor adds the bearer token as the card's
// securityRequirements ask.
func (tg *target) client(t *testing.T) (*a2aclient.Client, context.Context) {
	t.Helper()
	ctx := t.Context()
	card, err := agentcard.DefaultResolver.Resolve(ctx, tg.base)
	if err != nil {
		t.Fatalf("%s: the SDK cannot resolve the agent card: %v", tg.name, err)
	}
	creds := a2aclient.NewInMemoryCredentialsStore()
	creds.Set("test", "bearer", a2aclient.AuthCredential(tg.token))
	c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithCallInterceptors(&a2aclient.AuthInterceptor{Service: creds}))
	if err != nil {
		t.Fatalf("%s: NewFromCard: %v", tg.name, err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c, a2aclient.AttachSessionID(ctx, "test")
}

// client03 builds the SDK's v0.3 compatibility client for the target's
// v0.3 endpoint.
func (tg *target) client03(t *testing.T) (*a2aclient.Client, context.Context) {
	t.Helper()
	hc := &http.Client{Timeout: time.Minute, Transport: bearer{token: tg.token}}
	ifc := &a2a.AgentInterface{URL: tg.v03URL, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version}
	c, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{ifc},
		a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: hc}))
	if err != nil {
		t.Fatalf("%s: v0.3 client: %v", tg.name, err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c, t.Context()
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// startJS runs @a2a-js/sdk's reference server (js/server.mjs) under node.
// Without node or js/node_modules (make test-a2a runs npm ci) the test is
// skipped, except in CI, where it fails.
func startJS(t *testing.T) *target {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join("js", "node_modules", "@a2a-js", "sdk"))
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the JS SDK server needs node and js/node_modules (npm ci): %v", err)
		}
		t.Skipf("the JS SDK server needs node and js/node_modules (npm ci in js/): %v", err)
	}
	cmd := exec.Command(node, "server.mjs", "0")
	cmd.Dir = "js"
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
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
		base := "http://127.0.0.1:" + p
		return &target{name: "a2a-js", base: base, v03URL: base + "/a2a", known: map[string]string{
			"executor error":   "its request handler turns an executor's error into a failed task, so SendMessage succeeds",
			"pre-stream error": "it answers a streaming method's early error as 200 application/json, which a2a-go's client does not read (it reads only data: lines)",
			"token header":     "its sender sends the token only when the config has no authentication",
			"cancel twice":     "it answers the cancelled task again instead of TaskNotCancelable (v1.0: a final task is not cancelable)",
		}}
	case <-time.After(20 * time.Second):
		t.Fatal("the JS SDK server did not start")
	}
	return nil
}
