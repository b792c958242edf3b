package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestVersionScript runs scripts/version.sh, what make build stamps into
// --version, in a repository of its own: without git, without a tag,
// on a release tag, after it, and with a VERSION that is no version.
func TestVersionScript(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	base, err := os.ReadFile("VERSION")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(base))
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(want) {
		t.Fatalf("VERSION holds %q, want MAJOR.MINOR.PATCH", want)
	}
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join("scripts", "version.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts", "version.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "VERSION"), base, 0o644); err != nil {
		t.Fatal(err)
	}
	version := func() (string, error) {
		out, err := exec.Command("sh", filepath.Join(dir, "scripts", "version.sh")).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	check := func(pattern string) {
		t.Helper()
		got, err := version()
		if err != nil {
			t.Fatalf("version.sh: %v: %s", err, got)
		}
		if !regexp.MustCompile("^" + pattern + "$").MatchString(got) {
			t.Errorf("version.sh printed %q, want %s", got, pattern)
		}
	}
	os.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir))
	defer os.Unsetenv("GIT_CEILING_DIRECTORIES")
	v := regexp.QuoteMeta("v" + want)
	check(v + `-dev`)
	git("init", "-q")
	git("add", ".")
	git("commit", "-qm", "first")
	check(v + `-dev\+[0-9a-f]{12}`)
	if err := os.WriteFile(filepath.Join(dir, "VERSION"), append(base, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	check(v + `-dev\+[0-9a-f]{12}\.dirty`)
	git("checkout", "-q", "--", "VERSION")
	git("tag", "v"+want)
	check(v)
	git("commit", "-q", "--allow-empty", "-m", "second")
	check(v + `-1-g[0-9a-f]+`)
	if err := os.WriteFile(filepath.Join(dir, "VERSION"), []byte("1.2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := version(); err == nil {
		t.Errorf("version.sh accepted VERSION 1.2 and printed %q", got)
	}
}
