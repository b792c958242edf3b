package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if err != nil || string(b) != "new" || fi.Mode().Perm() != 0o600 {
		t.Errorf("content %q mode %v err %v, want \"new\" and 0600", b, fi.Mode().Perm(), err)
	}
	assertOnly(t, dir, "f")
}

func TestAbortLeavesOldContent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("half of the new"); err != nil {
		t.Fatal(err)
	}
	f.Abort()
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("after Abort the file holds %q, want the old content", b)
	}
	assertOnly(t, dir, "f")
}

func TestCreateInMissingDir(t *testing.T) {
	if _, err := Create(filepath.Join(t.TempDir(), "no", "f"), 0o644); err == nil {
		t.Error("Create in a directory that does not exist succeeded")
	}
}

// assertOnly checks that dir holds exactly the named entries (no
// temporary file left behind).
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if len(got) != len(names) {
		t.Fatalf("dir holds %v, want %v", got, names)
	}
	for i := range names {
		if got[i] != names[i] {
			t.Fatalf("dir holds %v, want %v", got, names)
		}
	}
}
