package main_test

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxPackageLines is the most code lines a package of the module may have
// (issue #16: "the largest package no more than ~4,000 lines"). A package
// that grows past it is split by job — the way handlers, peer, contracts
// and the cli/*cmd packages left agent and cli — not squeezed. Code lines
// are those of the package's non-test Go files that are neither blank nor
// a line comment (README, Layout).
const maxPackageLines = 4100

// TestPackageSize holds every package of the module under maxPackageLines
// and logs the largest ones.
func TestPackageSize(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	type size struct {
		pkg   string
		lines int
	}
	var sizes []size
	for _, p := range listModule(t) {
		n := 0
		for _, f := range p.GoFiles {
			src, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			n += codeLines(src)
		}
		sizes = append(sizes, size{rel(p.ImportPath), n})
	}
	sort.Slice(sizes, func(i, j int) bool { return sizes[i].lines > sizes[j].lines })
	for i, s := range sizes {
		if i < 5 {
			t.Logf("%-16s %5d code lines", s.pkg, s.lines)
		}
		if s.lines > maxPackageLines {
			t.Errorf("package %s has %d code lines, over %d: split a job out of it", s.pkg, s.lines, maxPackageLines)
		}
	}
}

// codeLines counts the lines of src that are neither blank nor a line
// comment.
func codeLines(src []byte) int {
	n := 0
	for line := range bytes.Lines(src) {
		s := strings.TrimSpace(string(line))
		if s != "" && !strings.HasPrefix(s, "//") {
			n++
		}
	}
	return n
}

func TestCodeLines(t *testing.T) {
	src := "// Package x does.\npackage x\n\n\t// a comment\nfunc f() {} // trailing\n   \n/* block */\n"
	if got := codeLines([]byte(src)); got != 3 {
		t.Errorf("codeLines = %d, want 3 (package, func, block comment)", got)
	}
}
