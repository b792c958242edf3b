package e2e_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/client/agenttest"
	"github.com/synapse-edge/synapse/wire"
	"golang.org/x/crypto/blake2b"
)

// The self-update tests (issue 32, README "Updating"): real binaries of
// three versions: v1 is the binary TestMain built (version "dev"), v2 the
// same source with another -X Version, and v2-crash is v2 built with
// -tags synapse_startfault, a release that exits 3 at each start right
// after its trial start is counted. The two are built once (a link each,
// about 3 s on a quiet 2-core machine).
const (
	updV1    = "dev"
	updV2    = "v2.0.0-upd"
	updCrash = "v2.0.0-crash"
)

var updBins struct {
	once sync.Once
	dir  string
	path map[string]string
	err  error
}

// updateBinaries builds the three releases (once per test process).
func updateBinaries(t *testing.T) map[string]string {
	t.Helper()
	updBins.once.Do(func() {
		// Beside TestMain's binary, in the directory it removes (a binary
		// given by SYNAPSE_E2E_BIN leaves them in a temporary directory).
		updBins.dir = filepath.Dir(synapseBin)
		if !strings.HasPrefix(filepath.Base(updBins.dir), "synapse-e2e-bin-") {
			if updBins.dir, updBins.err = os.MkdirTemp("", "synapse-e2e-update-"); updBins.err != nil {
				return
			}
		}
		root, err := moduleRoot()
		if err != nil {
			updBins.err = err
			return
		}
		updBins.path = map[string]string{updV1: synapseBin}
		for _, v := range []struct{ version, tags string }{{updV2, ""}, {updCrash, "synapse_startfault"}} {
			out := filepath.Join(updBins.dir, "synapse-"+v.version)
			cmd := exec.Command("go", "build", "-o", out, "-tags", v.tags,
				"-ldflags", "-X github.com/synapse-edge/synapse/cli.Version="+v.version, ".")
			cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
			if b, err := cmd.CombinedOutput(); err != nil {
				updBins.err = fmt.Errorf("build %s: %v\n%s", v.version, err, b)
				return
			}
			updBins.path[v.version] = out
		}
	})
	if updBins.err != nil {
		t.Fatal(updBins.err)
	}
	return updBins.path
}

// releaseKey is a release key of the tests, in minisign's formats (the
// signer is build/minisign's: prehashed "ED").
type releaseKey struct {
	id   [8]byte
	priv ed25519.PrivateKey
}

func newReleaseKey(t *testing.T) *releaseKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k := &releaseKey{priv: priv}
	_, _ = rand.Read(k.id[:])
	return k
}

func (k *releaseKey) pubFile() string {
	blob := append(append([]byte("Ed"), k.id[:]...), k.priv.Public().(ed25519.PublicKey)...)
	return "untrusted comment: minisign public key of the test\n" + base64.StdEncoding.EncodeToString(blob) + "\n"
}

func (k *releaseKey) sign(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	h := blake2b.Sum512(b)
	sig := ed25519.Sign(k.priv, h[:])
	comment := "timestamp:1796083200\tfile:" + filepath.Base(file) + "\thashed"
	global := ed25519.Sign(k.priv, append(slices.Clone(sig), comment...))
	text := fmt.Sprintf("untrusted comment: signature from the test key\n%s\ntrusted comment: %s\n%s\n",
		base64.StdEncoding.EncodeToString(append(append([]byte("ED"), k.id[:]...), sig...)), comment,
		base64.StdEncoding.EncodeToString(global))
	if err := os.WriteFile(file+".minisig", []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return file + ".minisig"
}

// updateSite is a gateway's layout: DIR/bin/synapse (a copy of v1), the
// config trusting key, the data directory, and a copy of each release
// signed by key.
type updateSite struct {
	dir, bin, config, data string
	release                map[string]string
	token                  string
}

func newUpdateSite(t *testing.T, key *releaseKey, restart string, healthSeconds int) *updateSite {
	t.Helper()
	bins := updateBinaries(t)
	dir := t.TempDir()
	s := &updateSite{dir: dir, bin: filepath.Join(dir, "bin", "synapse"), config: filepath.Join(dir, "config.json"),
		data: filepath.Join(dir, "data"), release: map[string]string{}, token: randomToken(t)}
	if err := os.MkdirAll(filepath.Dir(s.bin), 0o755); err != nil {
		t.Fatal(err)
	}
	copyExec(t, bins[updV1], s.bin)
	for v, p := range bins {
		s.release[v] = filepath.Join(dir, "releases", "synapse-"+v)
		if err := os.MkdirAll(filepath.Dir(s.release[v]), 0o755); err != nil {
			t.Fatal(err)
		}
		copyExec(t, p, s.release[v])
		key.sign(t, s.release[v])
	}
	if err := os.WriteFile(filepath.Join(dir, "release.pub"), []byte(key.pubFile()), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`{"update": {"release_keys_file": "release.pub", "health_timeout_seconds": %d, "restart": %q}}`, healthSeconds, restart)
	if err := os.WriteFile(s.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

func copyExec(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// update runs the site's binary's update command (the gateway's own
// synapse).
func (s *updateSite) update(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, append([]string{"update", "--config", s.config}, args...)...)
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatalf("update: %v\n%s", err, out)
	}
	return 0, string(out)
}

func (s *updateSite) state(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(s.bin + ".update")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("state file: %v\n%s", err, b)
	}
	return st
}

// served is one run of the site's agent, kept running by a loop that
// plays the service manager when supervised (Restart=on-failure: a
// non-zero exit is restarted after 100 ms, at most 10 times).
type served struct {
	t      *testing.T
	site   *updateSite
	addr   string
	logs   syncBuffer
	mu     sync.Mutex
	cur    *exec.Cmd
	exits  []int
	pids   []int
	stopc  chan struct{}
	done   chan struct{}
	starts chan int
}

func (s *updateSite) serve(t *testing.T, supervised bool) *served {
	t.Helper()
	p := &served{t: t, site: s, addr: freeAddr(t), stopc: make(chan struct{}), done: make(chan struct{}), starts: make(chan int, 16)}
	start := func() (*exec.Cmd, error) {
		cmd := exec.Command(s.bin, "serve", "--data", s.data, "--listen", p.addr, "--config", s.config, "--grace", "2s")
		agenttest.DieWithParent(cmd)
		cmd.Env = append(cleanEnv(), "SYNAPSE_ADMIN_TOKEN="+s.token)
		cmd.Stdout, cmd.Stderr = &p.logs, &p.logs
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		p.mu.Lock()
		p.cur = cmd
		p.pids = append(p.pids, cmd.Process.Pid)
		p.mu.Unlock()
		return cmd, nil
	}
	cmd, err := start()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		for n := 0; ; n++ {
			err := cmd.Wait()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			}
			p.mu.Lock()
			p.exits = append(p.exits, code)
			p.mu.Unlock()
			select {
			case <-p.stopc:
				return
			default:
			}
			if !supervised || code == 0 || n >= 10 {
				return
			}
			time.Sleep(100 * time.Millisecond)
			if cmd, err = start(); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("agent log:\n%s", p.logs.String())
		}
	})
	return p
}

func (p *served) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur.Process.Pid
}

func (p *served) exitCodes() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.exits)
}

// stop ends the agent (SIGTERM, then SIGKILL after 10 s).
func (p *served) stop() {
	select {
	case <-p.stopc:
		<-p.done
		return
	default:
	}
	close(p.stopc)
	p.mu.Lock()
	cmd := p.cur
	p.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-p.done
	}
}

// health is the agent's /health (status, version), or an error.
func (p *served) health() (status, version string, err error) {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + p.addr + wire.APIPrefix + "/health")
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	var h struct{ Status, Version string }
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return "", "", err
	}
	return h.Status, h.Version, nil
}

// waitVersion waits until /health says SERVING with version.
func (p *served) waitVersion(version string, within time.Duration) time.Duration {
	p.t.Helper()
	start := time.Now()
	var last string
	for time.Since(start) < within {
		st, v, err := p.health()
		if err == nil && st == "SERVING" && v == version {
			return time.Since(start)
		}
		last = fmt.Sprintf("%s %s %v", st, v, err)
		time.Sleep(pollEvery)
	}
	p.t.Fatalf("no SERVING %s within %v (last: %s); exits %v", version, within, last, p.exitCodes())
	return 0
}

// TestUpdateRunsNewVersion: a signed release, downloaded over HTTP, is
// installed by the gateway's synapse, the agent restarts into it on
// SIGUSR2 (exec: the same pid) and commits it once SERVING.
func TestUpdateRunsNewVersion(t *testing.T) {
	key := newReleaseKey(t)
	site := newUpdateSite(t, key, "exec", 20)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.FileServer(http.Dir(filepath.Dir(site.release[updV2])))}
	go hs.Serve(ln)
	defer hs.Close()

	agent := site.serve(t, false)
	agent.waitVersion(updV1, healthTimeout)
	pid := agent.pid()
	url := "http://" + ln.Addr().String() + "/" + filepath.Base(site.release[updV2])
	code, out := site.update(t, "--url", url, "--pid", fmt.Sprint(pid))
	if code != 0 {
		t.Fatalf("update: exit %d\n%s", code, out)
	}
	took := agent.waitVersion(updV2, healthTimeout)
	t.Logf("v2 SERVING %v after the update command", took)
	if agent.pid() != pid {
		t.Fatalf("the agent is pid %d, not %d: exec keeps the pid", agent.pid(), pid)
	}
	deadline := time.Now().Add(healthTimeout)
	for site.state(t)["state"] != "ok" {
		if time.Now().After(deadline) {
			t.Fatalf("state %v", site.state(t))
		}
		time.Sleep(pollEvery)
	}
	if st := site.state(t); st["version"] != updV2 || st["from_version"] != updV1 || !strings.HasPrefix(st["source"].(string), "url ") {
		t.Fatalf("state %v", st)
	}
	prev, _ := exec.Command(site.bin+".prev", "--version").Output()
	if !strings.Contains(string(prev), updV1) {
		t.Fatalf("synapse.prev is %q", prev)
	}
	// The kept previous binary is the one that ran: the next update
	// keeps v2 in its place. Updating to the same release again is fine.
	if code, out := site.update(t, "--file", site.release[updV2]); code != 0 {
		t.Fatalf("second update: %d %s", code, out)
	}
	agent.stop()
	if codes := agent.exitCodes(); !slices.Equal(codes, []int{0}) {
		t.Fatalf("exit codes %v", codes)
	}
}

// TestUpdateRefused: a changed binary, another key's signature, a legacy
// or missing signature, a non-synapse program and one over the size cap
// are refused and change nothing; the minisign tool agrees on the
// signatures.
func TestUpdateRefused(t *testing.T) {
	key, other := newReleaseKey(t), newReleaseKey(t)
	site := newUpdateSite(t, key, "exec", 20)
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt")
	b, _ := os.ReadFile(site.release[updV2])
	b[len(b)/2] ^= 0x40
	if err := os.WriteFile(corrupt, b, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFileTo(t, site.release[updV2]+".minisig", corrupt+".minisig")
	wrongKey := filepath.Join(dir, "wrong-key")
	copyExec(t, site.release[updV2], wrongKey)
	other.sign(t, wrongKey)
	unsigned := filepath.Join(dir, "unsigned")
	copyExec(t, site.release[updV2], unsigned)
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	key.sign(t, script)

	if ms, err := exec.LookPath("minisign"); err == nil {
		pub := filepath.Join(site.dir, "release.pub")
		if out, err := exec.Command(ms, "-V", "-H", "-p", pub, "-m", site.release[updV2]).CombinedOutput(); err != nil {
			t.Fatalf("minisign -V of a good release: %v\n%s", err, out)
		}
		for _, f := range []string{corrupt, wrongKey} {
			if out, err := exec.Command(ms, "-V", "-p", pub, "-m", f).CombinedOutput(); err == nil {
				t.Fatalf("minisign -V verified %s: %s", f, out)
			}
		}
	} else if os.Getenv("CI") == "true" {
		t.Fatal("minisign is not installed (scripts/ci-deps.sh installs it)")
	}

	before, _ := os.ReadFile(site.bin)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"corrupt", []string{"--file", corrupt}, "does not match the file"},
		{"wrong key", []string{"--file", wrongKey}, "is not one of the 1 release key(s) of the config"},
		{"unsigned", []string{"--file", unsigned}, "signature: open"},
		{"not synapse", []string{"--file", script}, "not \"synapse VERSION"},
		{"sha256", []string{"--file", site.release[updV2], "--sha256", strings.Repeat("0", 64)}, "SHA-256"},
		{"no source", nil, "give one of --file BIN and --url URL"},
		{"no server", []string{"--url", "http://127.0.0.1:1/nothing"}, "download http://127.0.0.1:1/nothing.minisig"},
	} {
		code, out := site.update(t, c.args...)
		if code == 0 || !strings.Contains(out, c.want) {
			t.Errorf("%s: exit %d, output %q, want %q", c.name, code, out, c.want)
		}
		after, _ := os.ReadFile(site.bin)
		if !bytes.Equal(before, after) {
			t.Fatalf("%s: the binary changed", c.name)
		}
		if left, _ := filepath.Glob(filepath.Join(filepath.Dir(site.bin), "*")); len(left) != 1 {
			t.Fatalf("%s: the directory holds %v", c.name, left)
		}
	}
	// Over the cap (update.max_bytes).
	if err := os.WriteFile(site.config, []byte(`{"update": {"release_keys_file": "release.pub", "max_bytes": 1000000}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := site.update(t, "--file", site.release[updV2]); code == 0 || !strings.Contains(out, "larger than the 1000000-byte cap") {
		t.Errorf("over the cap: exit %d, %q", code, out)
	}
}

func copyFileTo(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestUpdateRollsBackACrashingRelease: under a service manager (restart
// "exit"; the test restarts a non-zero exit as Restart=on-failure does),
// a release that exits at start is rolled back: its second start finds
// its first trial start unfinished, puts v1 back and execs it, well
// within the health time.
func TestUpdateRollsBackACrashingRelease(t *testing.T) {
	key := newReleaseKey(t)
	const health = 20
	site := newUpdateSite(t, key, "exit", health)
	agent := site.serve(t, true)
	agent.waitVersion(updV1, healthTimeout)
	if code, out := site.update(t, "--file", site.release[updCrash], "--pid", fmt.Sprint(agent.pid())); code != 0 {
		t.Fatalf("update: exit %d\n%s", code, out)
	}
	start := time.Now()
	took := agent.waitVersion(updV1, health*time.Second)
	// The agent answered v1 again: the exits must be v1's restart (75)
	// and the crash (3), in that order, then v1 serving.
	codes := agent.exitCodes()
	if !slices.Equal(codes, []int{75, 3}) {
		t.Fatalf("exit codes %v, want [75 3]", codes)
	}
	st := site.state(t)
	if st["state"] != "rolled_back" || !strings.Contains(fmt.Sprint(st["reason"]), "did not report SERVING") || st["version"] != updCrash {
		t.Fatalf("state %v", st)
	}
	if !strings.Contains(agent.logs.String(), "update: rolled back") {
		t.Fatal("no rollback in the log")
	}
	out, _ := exec.Command(site.bin, "--version").Output()
	if !strings.Contains(string(out), updV1) {
		t.Fatalf("the binary in place is %q", out)
	}
	t.Logf("rolled back to v1 SERVING %v after the update (%v measured from after it); health time %ds", took, time.Since(start), health)
	code, status := site.update(t, "--status")
	if code != 1 || !strings.Contains(status, "rolled_back") {
		t.Fatalf("update --status: %d %q", code, status)
	}
}

// TestUpdateKillDuringSwap: synapse update is killed (-9) at random
// points of its run, 20 times: a third anywhere in a whole run, a third
// in its swap (from the moment the new binary's temporary file appears),
// a third in its last steps (from the moment synapse.prev appears: the
// state file, the rename, the directory's sync). Each time the binary in place runs, is v1 or
// v2, and serves (a v2 on trial commits itself).
func TestUpdateKillDuringSwap(t *testing.T) {
	key := newReleaseKey(t)
	site := newUpdateSite(t, key, "exec", 20)
	pristine, _ := os.ReadFile(site.bin)
	binDir := filepath.Dir(site.bin)
	tmpSeen := func() bool {
		m, _ := filepath.Glob(filepath.Join(binDir, ".synapse.new-*"))
		return len(m) > 0
	}
	prevSeen := func() bool {
		_, err := os.Stat(site.bin + ".prev")
		return err == nil
	}
	reset := func() {
		for _, p := range []string{site.bin + ".prev", site.bin + ".update"} {
			os.Remove(p)
		}
		if err := os.WriteFile(site.bin, pristine, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	start := func() *exec.Cmd {
		cmd := exec.Command(site.bin, "update", "--config", site.config, "--file", site.release[updV2])
		cmd.Env = cleanEnv()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	// whole runs first, for the spans the kills are spread over.
	var span, swap, last time.Duration
	for range 2 {
		reset()
		begin := time.Now()
		cmd := start()
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		var seenTmp, seenPrev time.Time
	wait:
		for {
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("update: %v", err)
				}
				break wait
			case <-time.After(200 * time.Microsecond):
				if seenTmp.IsZero() && tmpSeen() {
					seenTmp = time.Now()
				}
				if seenPrev.IsZero() && prevSeen() {
					seenPrev = time.Now()
				}
			}
		}
		span, swap, last = time.Since(begin), span/2, span/10
		if !seenTmp.IsZero() {
			swap = time.Since(seenTmp)
		}
		if !seenPrev.IsZero() {
			last = time.Since(seenPrev)
		}
	}
	got := map[string]int{}
	for i := range 20 {
		reset()
		cmd := start()
		var delay time.Duration
		waitFor := func(seen func() bool) {
			for deadline := time.Now().Add(10 * time.Second); !seen() && time.Now().Before(deadline); {
				time.Sleep(100 * time.Microsecond)
			}
		}
		switch i % 3 {
		case 0:
			delay = time.Duration(mrand.Int64N(int64(span + span/5)))
		case 1:
			waitFor(tmpSeen)
			delay = time.Duration(mrand.Int64N(int64(swap + swap/5)))
		case 2:
			waitFor(prevSeen)
			delay = time.Duration(mrand.Int64N(int64(last + last/5 + 1)))
		}
		time.Sleep(delay)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		out, err := exec.Command(site.bin, "--version").Output()
		if err != nil {
			t.Fatalf("try %d (kill after %v): the binary does not run: %v", i, delay, err)
		}
		version := strings.Fields(string(out))[1]
		if version != updV1 && version != updV2 {
			t.Fatalf("try %d: version %q", i, version)
		}
		agent := site.serve(t, false)
		agent.waitVersion(version, healthTimeout)
		agent.stop()
		st := site.state(t)
		got[fmt.Sprintf("%s/%v", version, st["state"])]++
	}
	t.Logf("a whole update took %v, its swap %v, its last steps %v; after 20 kills: %v (binary/state after the restart; <nil>: killed before the state file)", span, swap, last, got)
}
