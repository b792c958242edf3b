// Package mqtttest starts a real mosquitto for tests: on a free loopback
// port, with a config file the test writes, optionally with TLS (a CA,
// server and client certificates it generates) and a password file, and
// without persistence (mosquitto's default), so that a restart loses every
// session and every queued message — the fault the MQTT transport must
// survive. Options.Persistent gives instead a broker as deployed for
// durable delivery: persistence on, stopped gracefully, so the sessions
// and the messages it acknowledged survive its restart.
//
// A test that needs a broker calls Start; when the mosquitto binary is
// missing the test is skipped with the reason, except under CI=true, where
// it fails (scripts/ci-deps.sh installs mosquitto there).
package mqtttest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/client/agenttest"
)

// Options shape the broker.
type Options struct {
	// TLS makes the listener mqtts and requires a client certificate
	// signed by the generated CA (Broker.Certs has the files).
	TLS bool
	// TCPNoDelay sets mosquitto's set_tcp_nodelay (off by default: then
	// Nagle's algorithm holds a small packet that follows another on the
	// same connection until the peer's delayed ACK, about 40 ms, which a
	// request and its answer pay once each).
	TCPNoDelay bool
	// Users, when set, turns off anonymous access: each key is a user
	// name, its value the password.
	Users map[string]string
	// Persistent turns persistence on (in the broker's directory) and
	// makes Stop and Restart graceful (SIGTERM, so mosquitto saves its
	// sessions and queued messages first).
	Persistent bool
}

// Broker is a running mosquitto.
type Broker struct {
	t     testing.TB
	bin   string
	dir   string
	conf  string
	keep  bool   // Options.Persistent
	Addr  string // 127.0.0.1:port
	Certs Certs  // with Options.TLS

	mu   sync.Mutex
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
}

// URL is the broker's URL for the mqtt config section: mqtt://addr, or
// mqtts://addr with TLS.
func (b *Broker) URL() string {
	if b.Certs.CA != "" {
		return "mqtts://" + b.Addr
	}
	return "mqtt://" + b.Addr
}

// Binary returns the mosquitto binary, or skips t (fails under CI=true)
// when there is none.
func Binary(t testing.TB) string {
	t.Helper()
	return lookBinary(t, "mosquitto", "/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto")
}

// lookBinary returns the first of paths (the first a name looked up in
// PATH) that exists, or skips t (fails under CI=true, where
// scripts/ci-deps.sh installs the Debian package of that name).
func lookBinary(t testing.TB, paths ...string) string {
	t.Helper()
	for _, p := range paths {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not installed; CI must have it (scripts/ci-deps.sh installs it)", paths[0])
	}
	t.Skipf("%s is not installed (scripts/ci-deps.sh --install installs it); skipping the tests against it", paths[0])
	return ""
}

// Start writes a config and starts mosquitto on a free 127.0.0.1 port; it
// is stopped when the test ends.
func Start(t testing.TB, o Options) *Broker {
	t.Helper()
	b := &Broker{t: t, bin: Binary(t), dir: t.TempDir(), keep: o.Persistent}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b.Addr = ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(b.Addr)
	var conf strings.Builder
	if o.Persistent {
		fmt.Fprintf(&conf, "persistence true\npersistence_location %s/\n", b.dir)
	} else {
		conf.WriteString("persistence false\n")
	}
	fmt.Fprintf(&conf, "listener %s 127.0.0.1\nmax_queued_messages 100000\n", port)
	if os.Geteuid() == 0 {
		// As root mosquitto would switch to the user mosquitto, which
		// cannot read the test's files.
		conf.WriteString("user root\n")
	}
	if o.TCPNoDelay {
		conf.WriteString("set_tcp_nodelay true\n")
	}
	if o.TLS {
		b.Certs = writeCerts(t, b.dir)
		fmt.Fprintf(&conf, "cafile %s\ncertfile %s\nkeyfile %s\nrequire_certificate true\n",
			b.Certs.CA, b.Certs.serverCert, b.Certs.serverKey)
	}
	if len(o.Users) > 0 {
		pw := filepath.Join(b.dir, "passwd")
		for u, p := range o.Users {
			args := []string{"-b", pw, u, p}
			if _, err := os.Stat(pw); err != nil {
				args = append([]string{"-c"}, args...)
			}
			if out, err := exec.Command(passwdBinary(t, b.bin), args...).CombinedOutput(); err != nil {
				t.Fatalf("mosquitto_passwd: %v: %s", err, out)
			}
		}
		fmt.Fprintf(&conf, "allow_anonymous false\npassword_file %s\n", pw)
	} else {
		conf.WriteString("allow_anonymous true\n")
	}
	b.conf = filepath.Join(b.dir, "mosquitto.conf")
	if err := os.WriteFile(b.conf, []byte(conf.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	b.start()
	t.Cleanup(b.Stop)
	return b
}

func passwdBinary(t testing.TB, mosquitto string) string {
	t.Helper()
	if p, err := exec.LookPath("mosquitto_passwd"); err == nil {
		return p
	}
	if p := filepath.Join(filepath.Dir(mosquitto), "mosquitto_passwd"); fileExists(p) {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("mosquitto_passwd is not installed")
	}
	t.Skip("mosquitto_passwd is not installed")
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func (b *Broker) start() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.log = &syncBuffer{}
	cmd := exec.Command(b.bin, "-c", b.conf)
	agenttest.DieWithParent(cmd)
	cmd.Stdout, cmd.Stderr = b.log, b.log
	if err := cmd.Start(); err != nil {
		b.t.Fatalf("start mosquitto: %v", err)
	}
	b.cmd, b.done = cmd, make(chan struct{})
	done := b.done
	go func() { _ = cmd.Wait(); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", b.Addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-done:
			b.t.Fatalf("mosquitto exited at start: %s", b.log.String())
		default:
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("mosquitto did not listen on %s within 10 s: %s", b.Addr, b.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the broker (SIGKILL: nothing is saved, every session and
// queued message is lost); a Persistent one is asked to stop (SIGTERM)
// and saves them first, killed only if it has not exited within 10 s.
// Safe to call twice.
func (b *Broker) Stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cmd == nil {
		return
	}
	if b.keep {
		_ = b.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-b.done:
			b.cmd = nil
			return
		case <-time.After(10 * time.Second):
		}
	}
	_ = b.cmd.Process.Kill()
	<-b.done
	b.cmd = nil
}

// Restart stops the broker and starts it again on the same port.
func (b *Broker) Restart() {
	b.t.Helper()
	b.Stop()
	b.start()
}

// Log is what mosquitto printed since its last start.
func (b *Broker) Log() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.log.String()
}

// syncBuffer is the broker's output, written by exec's copier while a
// test may read it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}
