package startpages_test

import (
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/internal/startpages"
)

// written is data the test changes at run time: Release must leave the
// data segment (private, modified pages) alone.
var written = [4096]byte{1}

// fileRSS is the resident size, in kB, of the file-backed mappings of
// this process (/proc/self/smaps_rollup: Rss less Anonymous).
func fileRSS(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		t.Fatal(err)
	}
	field := func(name string) int64 {
		i := bytes.Index(b, []byte("\n"+name+":"))
		if i < 0 {
			t.Fatalf("no %s in smaps_rollup", name)
		}
		f := bytes.Fields(b[i+len(name)+2:])
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	return field("Rss") - field("Anonymous")
}

// TestRelease: after Release most of the binary's pages are no longer
// mapped in the process, the code still runs (the pages come back on
// use), and data the process wrote is intact.
func TestRelease(t *testing.T) {
	if runtime.GOOS != "linux" {
		n, err := startpages.Release()
		if n != 0 || err != nil {
			t.Fatalf("Release on %s = %d, %v; want 0, nil", runtime.GOOS, n, err)
		}
		t.Skip("Release does nothing outside Linux")
	}
	for i := range written {
		written[i] = byte(i)
	}
	before := fileRSS(t)
	n, err := startpages.Release()
	if err != nil {
		t.Fatal(err)
	}
	after := fileRSS(t)
	t.Logf("released %d bytes of address space; file-backed RSS %d kB -> %d kB", n, before, after)
	if n <= 0 {
		t.Fatalf("Release covered %d bytes", n)
	}
	if out, err := exec.Command("go", "env", "GOHOSTARCH").Output(); err == nil && strings.TrimSpace(string(out)) != runtime.GOARCH {
		// Under qemu-user, smaps_rollup is the emulator's (its own
		// binary, its translated code), not the test's.
		t.Logf("a cross run (%s tests on a %s host): the RSS is the emulator's, not checked", runtime.GOARCH, strings.TrimSpace(string(out)))
	} else if after >= before*3/4 {
		t.Errorf("file-backed RSS %d kB after Release, %d kB before: want a quarter less at least", after, before)
	}
	for i := range written {
		if written[i] != byte(i) {
			t.Fatalf("written[%d] = %d after Release, want %d: the data segment was dropped", i, written[i], byte(i))
		}
	}
	// Code and read-only data fault back in: a second call runs the same
	// code again and succeeds.
	if _, err := startpages.Release(); err != nil {
		t.Fatal(err)
	}
}
