package mqtttest

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/client/agenttest"
)

// A Cluster is a NATS cluster with MQTT enabled: each node a nats-server
// process with JetStream (which MQTT needs: sessions, retained messages
// and QoS 1 deliveries are JetStream streams), routes to every other node,
// and an MQTT listener on 127.0.0.1. The MQTT streams are replicated on
// up to three nodes, so a node killed with SIGKILL loses none of the
// sessions, retained cards or queued messages the cluster acknowledged.
type Cluster struct {
	t     testing.TB
	bin   string
	user  bool // connect as ClusterUser
	Nodes []*Node
}

// Node is one nats-server of a Cluster.
type Node struct {
	c    *Cluster
	Name string
	// MQTTAddr is the node's MQTT listener, 127.0.0.1:port.
	MQTTAddr string
	conf     string

	mu   sync.Mutex
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
}

// NATSBinary returns the nats-server binary, or skips t (fails under
// CI=true, where scripts/ci-deps.sh installs Debian's nats-server).
func NATSBinary(t testing.TB) string {
	t.Helper()
	return lookBinary(t, "nats-server", "/usr/sbin/nats-server", "/usr/local/bin/nats-server")
}

// ClusterOptions shape a Cluster.
type ClusterOptions struct {
	// Nodes is the number of nodes (default 3).
	Nodes int
	// DenySubscribe, when set, makes the cluster take only the user
	// ClusterUser (password ClusterPassword), who may not subscribe to
	// these NATS subjects (MQTT topic a/b is subject a.b): the broker
	// refuses such a subscription with SUBACK 0x80.
	DenySubscribe []string
}

// The user of a cluster with ClusterOptions.DenySubscribe.
const ClusterUser, ClusterPassword = "synapse", "synapse-test"

// StartCluster starts the nodes and returns once each accepts an MQTT
// connection, which needs the cluster's JetStream to have a leader; the
// nodes are killed when the test ends.
//
// The ports are free when picked and taken by the servers a moment later;
// another process that takes one meanwhile (the packages' tests run in
// parallel) makes a node exit with "address already in use": the cluster
// is then built again on new ports, up to three times.
func StartCluster(t testing.TB, o ClusterOptions) *Cluster {
	t.Helper()
	for attempt := 1; ; attempt++ {
		c, taken := startCluster(t, o)
		if !taken {
			t.Cleanup(func() {
				for _, nd := range c.Nodes {
					nd.Kill()
				}
			})
			return c
		}
		for _, nd := range c.Nodes {
			nd.Kill()
		}
		if attempt == 3 {
			t.Fatalf("nats-server: a port was taken by another process at each of %d attempts", attempt)
		}
	}
}

// startCluster builds and starts the cluster once; taken reports a node
// that exited because another process took its port (the nodes are then
// left to the caller to kill).
func startCluster(t testing.TB, o ClusterOptions) (c *Cluster, taken bool) {
	t.Helper()
	n := o.Nodes
	if n <= 0 {
		n = 3
	}
	c = &Cluster{t: t, bin: NATSBinary(t), user: len(o.DenySubscribe) > 0}
	dir := t.TempDir()
	clusterPorts := make([]string, n)
	for i := range n {
		clusterPorts[i] = freeAddr(t)
	}
	var routes []string
	for _, a := range clusterPorts {
		routes = append(routes, "nats-route://"+a)
	}
	replicas := min(n, 3)
	auth := ""
	if len(o.DenySubscribe) > 0 {
		auth = fmt.Sprintf("authorization { users: [ {user: %q, password: %q, permissions: {subscribe: {deny: [%q]}}} ] }\n",
			ClusterUser, ClusterPassword, strings.Join(o.DenySubscribe, `", "`))
	}
	for i := range n {
		nd := &Node{c: c, Name: fmt.Sprintf("n%d", i+1), MQTTAddr: freeAddr(t)}
		store := filepath.Join(dir, nd.Name)
		cluster := "" // one node is a server of its own
		if n > 1 {
			cluster = fmt.Sprintf("cluster { name: synapse-test, listen: %s, routes: [%s] }\n", clusterPorts[i], strings.Join(routes, ", "))
		}
		conf := fmt.Sprintf(`server_name: %s
listen: %s
jetstream { store_dir: %q }
%smqtt { listen: %s, stream_replicas: %d, consumer_replicas: %d }
%s`, nd.Name, freeAddr(t), store, cluster, nd.MQTTAddr, replicas, replicas, auth)
		nd.conf = filepath.Join(dir, nd.Name+".conf")
		if err := os.WriteFile(nd.conf, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		c.Nodes = append(c.Nodes, nd)
	}
	for _, nd := range c.Nodes {
		nd.start()
	}
	for _, nd := range c.Nodes {
		if exited, err := nd.waitReady(60 * time.Second); err != nil {
			if exited && strings.Contains(nd.Log(), "address already in use") {
				return c, true
			}
			for _, nd := range c.Nodes {
				nd.Kill()
			}
			t.Fatal(err)
		}
	}
	return c, false
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// URL is the node's MQTT URL for the mqtt config section.
func (nd *Node) URL() string { return "mqtt://" + nd.MQTTAddr }

// Log is what the node printed since its last start.
func (nd *Node) Log() string {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.log == nil {
		return ""
	}
	return nd.log.String()
}

func (nd *Node) start() {
	nd.c.t.Helper()
	nd.mu.Lock()
	defer nd.mu.Unlock()
	nd.log = &syncBuffer{}
	cmd := exec.Command(nd.c.bin, "-c", nd.conf)
	agenttest.DieWithParent(cmd)
	cmd.Stdout, cmd.Stderr = nd.log, nd.log
	if err := cmd.Start(); err != nil {
		nd.c.t.Fatalf("start nats-server %s: %v", nd.Name, err)
	}
	nd.cmd, nd.done = cmd, make(chan struct{})
	done := nd.done
	go func() { _ = cmd.Wait(); close(done) }()
}

// Start starts a killed node again, on its store, and waits until it
// takes MQTT connections.
func (nd *Node) Start() {
	nd.start()
	nd.WaitReady(60 * time.Second)
}

// Kill kills the node with SIGKILL. Safe to call twice.
func (nd *Node) Kill() {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd == nil {
		return
	}
	_ = nd.cmd.Process.Kill()
	<-nd.done
	nd.cmd = nil
}

// WaitReady waits until the node answers an MQTT CONNECT with CONNACK 0
// (accepted), failing the test after d.
func (nd *Node) WaitReady(d time.Duration) {
	nd.c.t.Helper()
	if _, err := nd.waitReady(d); err != nil {
		nd.c.t.Fatal(err)
	}
}

// waitReady is WaitReady's wait; exited tells a node that exited from
// one that did not answer in time.
func (nd *Node) waitReady(d time.Duration) (exited bool, err error) {
	deadline := time.Now().Add(d)
	var last error
	for i := 0; ; i++ {
		if last = mqttConnect(nd.MQTTAddr, fmt.Sprintf("ready-%s-%d", nd.Name, i), nd.c.user); last == nil {
			return false, nil
		}
		nd.mu.Lock()
		done := nd.done
		nd.mu.Unlock()
		select {
		case <-done:
			return true, fmt.Errorf("nats-server %s exited: %s", nd.Name, nd.Log())
		default:
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("nats-server %s: no MQTT connection within %s (%v): %s", nd.Name, d, last, nd.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mqttConnect sends an MQTT 3.1.1 CONNECT with a clean session (as
// ClusterUser when user) and returns nil when the broker accepts it.
func mqttConnect(addr, clientID string, user bool) error {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	var vh bytes.Buffer
	flags := byte(0x02) // clean session
	if user {
		flags |= 0xc0 // user name, password
	}
	vh.Write([]byte{0, 4, 'M', 'Q', 'T', 'T', 4, flags, 0, 30}) // protocol, level 4, keep-alive 30 s
	fields := []string{clientID}
	if user {
		fields = append(fields, ClusterUser, ClusterPassword)
	}
	for _, f := range fields {
		vh.Write([]byte{byte(len(f) >> 8), byte(len(f))})
		vh.WriteString(f)
	}
	pkt := append([]byte{0x10, byte(vh.Len())}, vh.Bytes()...)
	if _, err := conn.Write(pkt); err != nil {
		return err
	}
	ack := make([]byte, 4)
	if _, err := io.ReadFull(conn, ack); err != nil {
		return err
	}
	if ack[0] != 0x20 || ack[3] != 0 {
		return fmt.Errorf("CONNACK % x", ack)
	}
	_, _ = conn.Write([]byte{0xe0, 0}) // DISCONNECT
	return nil
}
