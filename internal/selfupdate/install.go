package selfupdate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/synapse-edge/synapse/internal/atomicfile"
	"golang.org/x/crypto/blake2b"
)

// preflightTimeout bounds the new binary's --version run.
const preflightTimeout = 10 * time.Second

// Request is one update to install.
type Request struct {
	// Binary is the path of the binary to replace (the agent's).
	Binary string
	// Body is the new binary's bytes; at most Max are read.
	Body io.Reader
	Max  int64
	// Signature is the .minisig file's content.
	Signature []byte
	// SHA256, if set (hex), must be the new binary's.
	SHA256 string
	// Keys are the trusted release keys.
	Keys []PublicKey
	// FromVersion is the running version; Source where the binary came
	// from; HealthTimeout the new binary's time to report SERVING.
	FromVersion   string
	Source        string
	HealthTimeout time.Duration
	// Progress, if set, is called with the bytes read so far.
	Progress func(n int64)
}

// Install verifies the new binary and swaps it in (the package comment
// says how), leaving the state file "trial" for its first start. On an
// error the binary in place is the one there was.
func Install(ctx context.Context, r Request) (*State, error) {
	bin, err := filepath.Abs(r.Binary)
	if err != nil {
		return nil, err
	}
	sig, err := ParseSignature(r.Signature)
	if err != nil {
		return nil, err
	}
	if len(r.Keys) == 0 {
		return nil, errors.New("no release key to verify the update with")
	}
	info, err := os.Stat(bin)
	if err != nil {
		return nil, fmt.Errorf("the binary to replace: %w", err)
	}
	dir := filepath.Dir(bin)
	removeLeftovers(bin)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(bin)+".new-*")
	if err != nil {
		return nil, fmt.Errorf("write the new binary beside %s: %w", bin, err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	sh, bl := sha256.New(), mustBlake()
	n, err := copyCapped(io.MultiWriter(tmp, sh, bl), r.Body, r.Max, r.Progress)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errors.New("the new binary is empty")
	}
	sum := hex.EncodeToString(sh.Sum(nil))
	if r.SHA256 != "" && !strings.EqualFold(r.SHA256, sum) {
		return nil, fmt.Errorf("the binary's SHA-256 is %s, not %s: refused", sum, strings.ToLower(r.SHA256))
	}
	if err := sig.Verify(r.Keys, bl.Sum(nil)); err != nil {
		return nil, fmt.Errorf("refused: %w", err)
	}
	if err := tmp.Chmod(info.Mode().Perm() | 0o100); err != nil {
		return nil, err
	}
	if err := tmp.Sync(); err != nil {
		return nil, fmt.Errorf("sync the new binary: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	version, err := preflight(ctx, tmp.Name())
	if err != nil {
		return nil, err
	}
	// The previous binary: a second name of the running one, durable
	// before anything points at the new one.
	if err := keepPrevious(bin); err != nil {
		return nil, err
	}
	st := &State{
		State: StateTrial, Binary: bin, Previous: PrevPath(bin), SHA256: sum, Version: version,
		FromVersion: r.FromVersion, Source: r.Source, HealthTimeoutSeconds: int(max(r.HealthTimeout, time.Second) / time.Second),
		InstalledAt: time.Now().UTC(),
	}
	if err := writeState(bin, st); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), bin); err != nil {
		st.State, st.Reason, st.FinishedAt = StateAborted, "rename: "+err.Error(), time.Now().UTC()
		_ = writeState(bin, st)
		return nil, fmt.Errorf("put the new binary in place: %w", err)
	}
	done = true
	atomicfile.SyncDir(dir)
	return st, nil
}

func mustBlake() interface {
	io.Writer
	Sum([]byte) []byte
} {
	h, err := blake2b.New512(nil)
	if err != nil {
		panic(err) // only for a key longer than 64 bytes
	}
	return h
}

// copyCapped copies at most max bytes of src (0: no cap) and fails when
// there are more.
func copyCapped(dst io.Writer, src io.Reader, max int64, progress func(int64)) (int64, error) {
	if max <= 0 {
		max = DefaultMaxBytes
	}
	buf := make([]byte, 256<<10)
	var n int64
	for {
		k, err := src.Read(buf)
		if k > 0 {
			if n+int64(k) > max {
				return n, fmt.Errorf("the new binary is larger than the %d-byte cap (update.max_bytes)", max)
			}
			if _, werr := dst.Write(buf[:k]); werr != nil {
				return n, fmt.Errorf("write the new binary: %w", werr)
			}
			n += int64(k)
			if progress != nil {
				progress(n)
			}
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("read the new binary: %w", err)
		}
	}
}

// preflight runs the new binary's --version: it must run here (the
// right architecture, not truncated) and say it is synapse. It returns
// the version it prints.
func preflight(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = []string{}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("the new binary does not run here (%s --version: %v): refused", filepath.Base(path), err)
	}
	f := strings.Fields(out.String())
	if len(f) < 2 || f[0] != "synapse" {
		return "", fmt.Errorf("the new binary's --version printed %q, not \"synapse VERSION ...\": refused", firstLine(out.String()))
	}
	return f[1], nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

// keepPrevious makes NAME.prev the binary now at bin: a hard link (a
// copy where links are not allowed) under a temporary name, renamed.
func keepPrevious(bin string) error {
	dir := filepath.Dir(bin)
	tmp := filepath.Join(dir, "."+filepath.Base(bin)+".prev-tmp")
	os.Remove(tmp)
	if err := os.Link(bin, tmp); err != nil {
		if err := copyFile(bin, tmp); err != nil {
			return fmt.Errorf("keep the previous binary: %w", err)
		}
	}
	if err := os.Rename(tmp, PrevPath(bin)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("keep the previous binary: %w", err)
	}
	atomicfile.SyncDir(dir)
	return nil
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	info, err := src.Stat()
	if err != nil {
		return err
	}
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, info.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// removeLeftovers removes the temporary files of an install that was
// killed.
func removeLeftovers(bin string) {
	dir, base := filepath.Dir(bin), filepath.Base(bin)
	left, _ := filepath.Glob(filepath.Join(dir, "."+base+".new-*"))
	for _, p := range left {
		os.Remove(p)
	}
}

// restore puts the previous binary back at bin (the previous stays too)
// and records why in the state file.
func restore(bin string, st *State, reason string) error {
	prev := PrevPath(bin)
	dir := filepath.Dir(bin)
	tmp := filepath.Join(dir, "."+filepath.Base(bin)+".restore-tmp")
	os.Remove(tmp)
	if err := os.Link(prev, tmp); err != nil {
		if err := copyFile(prev, tmp); err != nil {
			return fmt.Errorf("restore the previous binary %s: %w", prev, err)
		}
	}
	if err := os.Rename(tmp, bin); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("restore the previous binary: %w", err)
	}
	atomicfile.SyncDir(dir)
	st.State, st.Reason, st.FinishedAt = StateRolledBack, reason, time.Now().UTC()
	return writeState(bin, st)
}

// fileSHA256 is the hex SHA-256 of the file at path.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
