package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// Fleet mode (-fleet): the agent's paths through an MQTT broker next to
// their HTTP counterparts, each between real agent processes the harness
// starts itself, with a mosquitto it starts on a loopback port from a
// config file it writes:
//
//   - northbound tier-1: frames ingested on an agent (WebSocket
//     /tier1/stream, acknowledged after fsync) and forwarded by its durable
//     uplink, until a consumer has every frame — through mosquitto to a
//     plain MQTT subscriber in the harness (uplink endpoint mqtt://), or
//     to a second agent that stores them, over one POST per batch (uplink
//     endpoint http://...) or over its WebSocket stream (ws://...);
//   - P2P delegations: an echo task with a target, submitted to agent A
//     with ?wait=30 and answered once B's result is back, between two
//     agents that only share the broker (endpoints mqtt:///ID) or that
//     reach each other over HTTP.

// fleetSystem is the system_id of every agent of the fleet.
const fleetSystem = "bench"

// Agent ids of the fleet.
const (
	nbMQTT   = "nb-mqtt"      // uplink mqtt://
	nbHTTP   = "nb-http"      // uplink http://nb-sink
	nbWS     = "nb-ws"        // uplink ws://nb-sink
	nbSink   = "nb-sink"      // stores what nb-http forwards
	dmA, dmB = "dm-a", "dm-b" // delegations over MQTT
	dhA, dhB = "dh-a", "dh-b" // delegations over HTTP
)

// uplinkTokenEnv names the variable holding nb-sink's token for nb-http
// (not SYNAPSE_*: the agent reads those as configuration).
const uplinkTokenEnv = "BENCH_UPLINK_TOKEN"

// proc is one server process the harness started; its output goes to a
// file in the fleet's directory.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *os.File
	done chan struct{}
}

func startProc(dir, name string, env []string, bin string, args ...string) (*proc, error) {
	out, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, out, out
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, out: out, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and kills the process if it is still there after 10 s.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	p.out.Close()
}

// tail is the end of the process's output.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.out.Name())
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// fleetAgent is one agent process of the fleet.
type fleetAgent struct {
	id, addr, token string
	p               *proc
}

func (a *fleetAgent) url() string { return "http://" + a.addr }

// call does one request on the agent's API and returns status and body.
func (a *fleetAgent) call(ctx context.Context, hc *http.Client, method, path string, body []byte) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.url()+path, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	if body != nil {
		req.Header.Set("Content-Type", wire.ContentJSON)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}

// fleet is the running processes of fleet mode.
type fleet struct {
	cfg       config
	dir       string
	broker    *proc
	mqttAddr  string
	agents    map[string]*fleetAgent
	consumer  *nbConsumer
	gen       *generator
	nonce     int64
	hc        *http.Client
	closeOnce sync.Once
}

// mosquittoConf is the broker's config: loopback only, no persistence
// (a PUBACK means "in the broker's memory" either way: mosquitto saves
// its database every 30 minutes, not per message), room for queued
// messages, and set_tcp_nodelay (without it Nagle's algorithm holds each
// small answer for the peer's delayed ACK, ~40 ms per round trip).
func mosquittoConf(port int) string {
	return fmt.Sprintf("listener %d 127.0.0.1\n", port) + mosquittoOptions()
}

// mosquittoOptions is the config without the listener.
func mosquittoOptions() string {
	s := "persistence false\nallow_anonymous true\nset_tcp_nodelay true\nmax_queued_messages 100000\n"
	if os.Geteuid() == 0 {
		s += "user root\n" // else it switches to the user mosquitto, who cannot read the config's directory
	}
	return s
}

// agentEnv is the harness's environment without SYNAPSE_* variables (the
// agent reads them as configuration), plus extra.
func agentEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SYNAPSE_") && !strings.HasPrefix(kv, uplinkTokenEnv+"=") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "bench-" + hex.EncodeToString(b[:])
}

// openFleet starts mosquitto and the eight agents, pairs the delegation
// pairs and connects the northbound consumer.
func openFleet(ctx context.Context, c config) (f *fleet, err error) {
	f = &fleet{cfg: c, dir: c.Dir, agents: map[string]*fleetAgent{}, gen: newGenerator(time.Now().UnixNano()),
		nonce: time.Now().Unix(), hc: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	defer func() {
		if err != nil {
			f.close()
		}
	}()
	ids := []string{nbMQTT, nbHTTP, nbWS, nbSink, dmA, dmB, dhA, dhB}
	ports, err := freePorts(len(ids) + 1)
	if err != nil {
		return f, err
	}
	f.mqttAddr = fmt.Sprintf("127.0.0.1:%d", ports[0])
	conf := filepath.Join(f.dir, "mosquitto.conf")
	if err := os.WriteFile(conf, []byte(mosquittoConf(ports[0])), 0o600); err != nil {
		return f, err
	}
	if f.broker, err = startProc(f.dir, "mosquitto", os.Environ(), c.MosquittoBin, "-c", conf); err != nil {
		return f, err
	}
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := waitTCP(rctx, f.mqttAddr); err != nil {
		return f, fmt.Errorf("mosquitto: %w\n%s", err, f.broker.tail())
	}
	for i, id := range ids {
		f.agents[id] = &fleetAgent{id: id, addr: fmt.Sprintf("127.0.0.1:%d", ports[i+1]), token: newToken()}
	}
	mq := map[string]any{"url": "mqtt://" + f.mqttAddr, "max_reconnect_ms": 1000}
	confs := map[string]map[string]any{
		nbMQTT: {"mqtt": mq, "uplink": map[string]any{"endpoint": "mqtt://", "max_backoff_ms": 1000}},
		nbHTTP: {"uplink": map[string]any{"endpoint": f.agents[nbSink].url(), "token_env": uplinkTokenEnv, "max_backoff_ms": 1000}},
		nbWS:   {"uplink": map[string]any{"endpoint": "ws://" + f.agents[nbSink].addr, "token_env": uplinkTokenEnv, "max_backoff_ms": 1000}},
		nbSink: {},
		dmA:    {"endpoint": "mqtt:///" + dmA, "mqtt": mq, "max_concurrent_tasks": 64},
		dmB:    {"endpoint": "mqtt:///" + dmB, "mqtt": mq, "max_concurrent_tasks": 64},
		dhA:    {"max_concurrent_tasks": 64},
		dhB:    {"max_concurrent_tasks": 64},
	}
	for _, id := range ids {
		a := f.agents[id]
		cf := confs[id]
		cf["agent_id"], cf["system_id"] = id, fleetSystem
		b, _ := json.Marshal(cf)
		path := filepath.Join(f.dir, id+".json")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return f, err
		}
		env := agentEnv("SYNAPSE_ADMIN_TOKEN="+a.token, uplinkTokenEnv+"="+f.agents[nbSink].token)
		a.p, err = startProc(f.dir, id, env, c.SynapseBin, "serve", "--data", filepath.Join(f.dir, id+"-data"),
			"--listen", a.addr, "--config", path, "--log-level", c.AgentLog)
		if err != nil {
			return f, err
		}
	}
	for _, id := range ids {
		a := f.agents[id]
		if err := waitHTTP(rctx, a.addr, a.token); err != nil {
			return f, fmt.Errorf("%s: %w\n%s", id, err, a.p.tail())
		}
	}
	if f.consumer, err = startConsumer(rctx, f.mqttAddr, fmt.Sprintf("synapse/%s/%s/tier1/#", fleetSystem, nbMQTT)); err != nil {
		return f, err
	}
	for _, pair := range [][2]string{{dmA, dmB}, {dhA, dhB}} {
		for _, x := range [][2]string{{pair[0], pair[1]}, {pair[1], pair[0]}} {
			endpoint := f.agents[x[1]].url()
			if strings.HasPrefix(x[0], "dm") {
				endpoint = "mqtt:///" + x[1]
			}
			if err := f.pair(rctx, x[0], endpoint); err != nil {
				return f, err
			}
		}
	}
	return f, nil
}

// pair makes agent from pin the agent at endpoint, retrying while the
// other side is not connected yet (an MQTT agent that has not subscribed
// to its inbox does not answer).
func (f *fleet) pair(ctx context.Context, from, endpoint string) error {
	body, _ := json.Marshal(map[string]string{"endpoint": endpoint})
	for {
		st, b, err := f.agents[from].call(ctx, f.hc, http.MethodPost, wire.APIPrefix+"/agents", body)
		if err == nil && (st == http.StatusCreated || st == http.StatusOK) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pair %s with %s: HTTP %d %.300s %v", from, endpoint, st, b, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// close stops every process (agents first, then the broker).
func (f *fleet) close() {
	f.closeOnce.Do(func() {
		if f.consumer != nil {
			f.consumer.close()
		}
		var wg sync.WaitGroup
		for _, a := range f.agents {
			if a.p != nil {
				wg.Add(1)
				go func() { defer wg.Done(); a.p.stop() }()
			}
		}
		wg.Wait()
		if f.broker != nil {
			f.broker.stop()
		}
	})
}

// alive fails when a process of the fleet has exited.
func (f *fleet) alive() error {
	var errs []error
	if f.broker.exited() {
		errs = append(errs, fmt.Errorf("mosquitto exited:\n%s", f.broker.tail()))
	}
	for _, a := range f.agents {
		if a.p.exited() {
			errs = append(errs, fmt.Errorf("agent %s exited:\n%s", a.id, a.p.tail()))
		}
	}
	return errors.Join(errs...)
}
