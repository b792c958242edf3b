package selfupdate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// installed is a directory with the binary of release v1 in place.
func installed(t *testing.T) (bin string, v1 []byte) {
	t.Helper()
	dir := t.TempDir()
	bin = filepath.Join(dir, "synapse")
	v1 = fakeRelease("v1.0.0")
	writeExec(t, bin, v1)
	return bin, v1
}

func request(bin string, k *testKey, body []byte, sig []byte) Request {
	return Request{Binary: bin, Body: bytes.NewReader(body), Max: 1 << 20, Signature: sig, FromVersion: "v1.0.0",
		Source: "file", HealthTimeout: 5 * time.Second, Keys: []PublicKey{}}
}

func TestInstall(t *testing.T) {
	bin, v1 := installed(t)
	k := newTestKey(t)
	v2 := fakeRelease("v2.0.0")
	r := request(bin, k, v2, k.sign(v2, "ED", "synapse v2"))
	r.Keys = []PublicKey{k.public(t)}
	sum := sha256.Sum256(v2)
	r.SHA256 = strings.ToUpper(hex.EncodeToString(sum[:]))
	st, err := Install(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readFile(t, bin), v2) || !bytes.Equal(readFile(t, PrevPath(bin)), v1) {
		t.Fatal("the binary is not v2, or the previous is not v1")
	}
	got, err := ReadState(bin)
	if err != nil || got.State != StateTrial || got.Version != "v2.0.0" || got.FromVersion != "v1.0.0" || got.Attempts != 0 ||
		got.SHA256 != hex.EncodeToString(sum[:]) || got.HealthTimeoutSeconds != 5 || st.Binary != bin {
		t.Fatalf("state %+v, %v", got, err)
	}
	if names := listDir(t, filepath.Dir(bin)); !slices.Equal(names, []string{"synapse", "synapse.prev", "synapse.update"}) {
		t.Fatalf("the directory holds %v", names)
	}
	if info, _ := os.Stat(bin); info.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v", info.Mode())
	}
}

// TestInstallRefuses: every bad update leaves the directory as it was.
func TestInstallRefuses(t *testing.T) {
	k, other := newTestKey(t), newTestKey(t)
	v2 := fakeRelease("v2.0.0")
	notSynapse := []byte("#!/bin/sh\necho hello\n")
	crashes := []byte("#!/bin/sh\nexit 3\n")
	cases := []struct {
		name  string
		body  []byte
		sig   []byte
		keys  []PublicKey
		sha   string
		max   int64
		error string
	}{
		{"corrupt", append(bytes.Clone(v2), '#'), k.sign(v2, "ED", "c"), nil, "", 0, "does not match the file"},
		{"other key", v2, other.sign(v2, "ED", "c"), nil, "", 0, "is not one of the 1 release key"},
		{"legacy", v2, k.sign(v2, "Ed", "c"), nil, "", 0, "legacy"},
		{"no keys", v2, k.sign(v2, "ED", "c"), []PublicKey{}, "", 0, "no release key"},
		{"sha256", v2, k.sign(v2, "ED", "c"), nil, strings.Repeat("ab", 32), 0, "SHA-256"},
		{"too big", v2, k.sign(v2, "ED", "c"), nil, "", 10, "cap"},
		{"empty", nil, k.sign(nil, "ED", "c"), nil, "", 0, "empty"},
		{"not synapse", notSynapse, k.sign(notSynapse, "ED", "c"), nil, "", 0, "not \"synapse VERSION"},
		{"does not run", crashes, k.sign(crashes, "ED", "c"), nil, "", 0, "does not run here"},
		{"garbage", []byte{0x7f, 'E', 'L', 'F', 1, 2}, k.sign([]byte{0x7f, 'E', 'L', 'F', 1, 2}, "ED", "c"), nil, "", 0, "does not run here"},
		{"no signature", v2, nil, nil, "", 0, "signature: 1 lines"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bin, v1 := installed(t)
			r := request(bin, k, c.body, c.sig)
			r.Keys = []PublicKey{k.public(t)}
			if c.keys != nil {
				r.Keys = c.keys
			}
			r.SHA256 = c.sha
			if c.max != 0 {
				r.Max = c.max
			}
			_, err := Install(context.Background(), r)
			if err == nil || !strings.Contains(err.Error(), c.error) {
				t.Fatalf("error %v, want one with %q", err, c.error)
			}
			if !bytes.Equal(readFile(t, bin), v1) {
				t.Fatal("the binary changed")
			}
			if names := listDir(t, filepath.Dir(bin)); !slices.Equal(names, []string{"synapse"}) {
				t.Fatalf("the directory holds %v", names)
			}
		})
	}
}

// trialOf installs v2 over v1 and returns the binary.
func trialOf(t *testing.T) (bin string, v1, v2 []byte) {
	t.Helper()
	bin, v1 = installed(t)
	k := newTestKey(t)
	v2 = fakeRelease("v2.0.0")
	r := request(bin, k, v2, k.sign(v2, "ED", "c"))
	r.Keys = []PublicKey{k.public(t)}
	r.HealthTimeout = time.Second
	if _, err := Install(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return bin, v1, v2
}

func TestTrialCommits(t *testing.T) {
	bin, _, v2 := trialOf(t)
	s, err := Begin(Options{Version: "v2.0.0", Binary: bin})
	if err != nil || s.Restarting() {
		t.Fatalf("begin: %v, restarting %v", err, s.Restarting())
	}
	if st, _ := ReadState(bin); st.Attempts != 1 {
		t.Fatalf("the start was not counted: %+v", st)
	}
	ctx := s.Context(context.Background())
	n := 0
	s.Watch(ctx, func() error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	waitState(t, bin, StateOK)
	if code, err := s.End(nil); code != 0 || err != nil {
		t.Fatalf("end: %d %v", code, err)
	}
	if !bytes.Equal(readFile(t, bin), v2) {
		t.Fatal("v2 is not in place")
	}
	// A later start of the committed binary is no trial.
	s2, err := Begin(Options{Version: "v2.0.0", Binary: bin})
	if err != nil || s2.trial != nil || s2.Restarting() {
		t.Fatalf("second start: %v", err)
	}
}

func TestTrialTimesOut(t *testing.T) {
	bin, v1, _ := trialOf(t)
	s, err := Begin(Options{Version: "v2.0.0", Binary: bin, Config: &Config{Restart: RestartExit}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := s.Context(context.Background())
	start := time.Now()
	s.Watch(ctx, func() error { return errors.New("store_failing") })
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the trial did not end")
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("rolled back after %v, before the health timeout", d)
	}
	st := waitState(t, bin, StateRolledBack)
	if !strings.Contains(st.Reason, "did not report SERVING within 1s: store_failing") {
		t.Fatalf("reason %q", st.Reason)
	}
	if !bytes.Equal(readFile(t, bin), v1) {
		t.Fatal("v1 is not back")
	}
	if code, err := s.End(nil); code != ExitRestart || err != nil {
		t.Fatalf("end: %d %v, want exit %d", code, err, ExitRestart)
	}
}

func TestTrialServeFails(t *testing.T) {
	bin, v1, _ := trialOf(t)
	s, err := Begin(Options{Version: "v2.0.0", Binary: bin, Config: &Config{Restart: RestartExit}})
	if err != nil {
		t.Fatal(err)
	}
	s.Context(context.Background())
	if code, err := s.End(errors.New("listen: address in use")); code != ExitRestart || err != nil {
		t.Fatalf("end: %d %v", code, err)
	}
	st, _ := ReadState(bin)
	if st.State != StateRolledBack || !strings.Contains(st.Reason, "address in use") || !bytes.Equal(readFile(t, bin), v1) {
		t.Fatalf("state %+v", st)
	}
}

// TestTrialSecondStart: a start while the first one's trial is still
// open (it died) rolls back before anything else.
func TestTrialSecondStart(t *testing.T) {
	bin, v1, _ := trialOf(t)
	if _, err := Begin(Options{Version: "v2.0.0", Binary: bin}); err != nil {
		t.Fatal(err)
	}
	// The first start dies here (no End).
	s, err := Begin(Options{Version: "v2.0.0", Binary: bin})
	if err != nil || !s.Restarting() {
		t.Fatalf("second start: %v, restarting %v", err, s.Restarting())
	}
	st, _ := ReadState(bin)
	if st.State != StateRolledBack || !strings.Contains(st.Reason, "start 1 ended") || !bytes.Equal(readFile(t, bin), v1) {
		t.Fatalf("state %+v", st)
	}
	if !bytes.Equal(readFile(t, PrevPath(bin)), v1) {
		t.Fatal("the previous binary is gone")
	}
}

// TestTrialCleanStop: a clean stop on trial is not a failed start; the
// next start is the trial again.
func TestTrialCleanStop(t *testing.T) {
	bin, _, v2 := trialOf(t)
	s, err := Begin(Options{Version: "v2.0.0", Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	s.Context(context.Background())
	if code, err := s.End(nil); code != 0 || err != nil {
		t.Fatalf("end: %d %v", code, err)
	}
	st, _ := ReadState(bin)
	if st.State != StateTrial || st.Attempts != 0 || !bytes.Equal(readFile(t, bin), v2) {
		t.Fatalf("state %+v", st)
	}
}

// TestAborted: a trial state whose hash is not the binary's (the kill
// came between the state and the rename) is marked aborted.
func TestAborted(t *testing.T) {
	bin, v1, _ := trialOf(t)
	writeExec(t, bin, v1) // as if the rename had not happened
	s, err := Begin(Options{Version: "v1.0.0", Binary: bin})
	if err != nil || s.Restarting() || s.trial != nil {
		t.Fatalf("begin: %v", err)
	}
	if st, _ := ReadState(bin); st.State != StateAborted {
		t.Fatalf("state %+v", st)
	}
}

func TestStateHostile(t *testing.T) {
	bin, _ := installed(t)
	for name, in := range map[string]string{
		"not json": "{", "unknown state": `{"state":"maybe"}`, "huge": `{"state":"ok","reason":"` + strings.Repeat("x", maxStateBytes) + `"}`,
	} {
		if err := os.WriteFile(StatePath(bin), []byte(in), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadState(bin); err == nil {
			t.Errorf("%s: read", name)
		}
		// A start is not stopped by it.
		if s, err := Begin(Options{Binary: bin}); err != nil || s.Restarting() {
			t.Errorf("%s: begin: %v", name, err)
		}
	}
}

func TestConfig(t *testing.T) {
	k := newTestKey(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "release.pub"), []byte("untrusted comment: x\n"+k.pubLine()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &Config{ReleaseKeysFile: "release.pub", ReleaseKeys: []string{newTestKey(t).pubLine()}}
	c.SetDir(dir)
	keys, err := c.Keys()
	if err != nil || len(keys) != 2 || keys[1].ID != k.id {
		t.Fatalf("keys %v %v", keys, err)
	}
	if _, err := (*Config)(nil).Keys(); err == nil {
		t.Fatal("no section gave keys")
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	bad := &Config{ReleaseKeys: []string{"nope"}, HealthTimeoutSeconds: -1, Restart: "reboot", MaxBytes: -1,
		ReleaseKeysFile: "missing.pub", OperatorKeys: []string{"AAAA"}}
	bad.SetDir(dir)
	if err := bad.Validate(); err == nil || strings.Count(err.Error(), "update.") != 6 {
		t.Fatalf("validate: %v", err)
	}
	if (*Config)(nil).HealthTimeout() != DefaultHealthTimeout || (*Config)(nil).RestartMode() != RestartExec {
		t.Fatal("defaults")
	}
}

func waitState(t *testing.T, bin, want string) *State {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := ReadState(bin)
		if err == nil && st != nil && st.State == want {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("state %+v (%v), want %s", st, err, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
