package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// compatible are the licences that may be linked into the Apache-2.0
// binary: permissive ones that ask only that their notice be kept, and
// paho's dual offer, used under EDL-1.0 (BSD-3-Clause).
var compatible = map[string]bool{
	"MIT":                     true,
	"BSD-2-Clause":            true,
	"BSD-3-Clause":            true,
	"Apache-2.0":              true,
	"EPL-2.0 OR BSD-3-Clause": true,
}

// linkedModule is one module of the binary's build list.
type linkedModule struct {
	path, version, dir string
	local              bool // replaced by a directory of this repository
}

// linkedModules lists the modules the synapse binary links with tags,
// this module left out.
func linkedModules(t *testing.T, tags string) map[string]linkedModule {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	const format = `{{with .Module}}{{.Path}}|{{.Version}}|{{.Dir}}|{{with .Replace}}{{.Path}}{{end}}{{end}}`
	out, err := exec.Command(goBin, "list", "-deps", "-tags", tags, "-f", format, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps -tags %s: %v\n%s", tags, err, out)
	}
	mods := map[string]linkedModule{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 4 || f[0] == "" || f[0] == "github.com/synapse-edge/synapse" {
			continue
		}
		mods[f[0]] = linkedModule{path: f[0], version: f[1], dir: f[2], local: strings.HasPrefix(f[3], "./")}
	}
	return mods
}

// licenceRow is one row of the README's dependency table.
type licenceRow struct{ version, licence, linkedBy string }

// readmeLicences parses the table between the licences markers of
// README.md.
func readmeLicences(t *testing.T) map[string]licenceRow {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- licences:begin -->")
	table, _, ok2 := strings.Cut(rest, "<!-- licences:end -->")
	if !ok || !ok2 {
		t.Fatal("README.md has no <!-- licences:begin --> ... <!-- licences:end --> table")
	}
	rows := map[string]licenceRow{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) != 4 {
			continue
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if cells[0] == "module" || strings.HasPrefix(cells[0], "---") {
			continue
		}
		if _, dup := rows[cells[0]]; dup {
			t.Errorf("README.md lists %s twice", cells[0])
		}
		rows[cells[0]] = licenceRow{version: cells[1], licence: cells[2], linkedBy: cells[3]}
	}
	return rows
}

// classify names the licence a licence text states, by its operative
// clauses, or "" when it recognises none.
func classify(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	has := func(s string) bool { return strings.Contains(text, s) }
	switch {
	case has("Eclipse Public License") && has("Eclipse Distribution License"):
		return "EPL-2.0 OR BSD-3-Clause"
	case has("Apache License") && has("Version 2.0"):
		return "Apache-2.0"
	case has("Permission is hereby granted, free of charge"):
		return "MIT"
	case has("Redistribution and use in source and binary forms") && has("Neither the name"):
		return "BSD-3-Clause"
	case has("Redistribution and use in source and binary forms") && has("Redistributions in binary form"):
		return "BSD-2-Clause"
	}
	return ""
}

// moduleLicence reads the licence file of a module directory; a module
// replaced by this repository's own code is under this repository's
// LICENSE.
func moduleLicence(t *testing.T, m linkedModule) string {
	t.Helper()
	dir := m.dir
	if m.local {
		dir = "."
	}
	for _, name := range []string{"LICENSE", "LICENSE.md", "LICENSE.txt", "COPYING"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			return classify(string(b))
		}
	}
	t.Errorf("%s: no licence file in %s", m.path, dir)
	return ""
}

// TestDependencyLicences holds the README's dependency table to what the
// binaries link: a new dependency fails until its row names its licence,
// which must be the one its licence file states and compatible with
// Apache-2.0.
func TestDependencyLicences(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	plain := linkedModules(t, defaultTags)
	grpc := linkedModules(t, defaultTags+",grpc,grpcnotrace")
	if _, ok := plain["go.etcd.io/bbolt"]; !ok {
		t.Fatalf("go list found no bbolt among %d modules: not the synapse binary?", len(plain))
	}
	rows := readmeLicences(t)
	for path, m := range grpc {
		want := "-grpc"
		if _, ok := plain[path]; ok {
			want = "both"
		}
		row, ok := rows[path]
		if !ok {
			t.Errorf("%s %s is linked (%s) but README.md's licence table has no row for it", path, m.version, want)
			continue
		}
		if row.version != m.version {
			t.Errorf("%s: README.md says %s, the build links %s", path, row.version, m.version)
		}
		if !strings.HasPrefix(row.linkedBy, want) {
			t.Errorf("%s: README.md says linked by %q, want %q", path, row.linkedBy, want)
		}
		if !compatible[row.licence] {
			t.Errorf("%s: licence %q is not in the list of licences compatible with Apache-2.0", path, row.licence)
		}
		if got := moduleLicence(t, m); got != row.licence {
			t.Errorf("%s: README.md says %q, its licence file reads as %q", path, row.licence, got)
		}
	}
	for path := range rows {
		if _, ok := grpc[path]; !ok {
			t.Errorf("README.md's licence table lists %s, which no binary links", path)
		}
	}
	if got := classify(mustRead(t, "LICENSE")); got != "Apache-2.0" {
		t.Errorf("LICENSE reads as %q, want Apache-2.0", got)
	}
	if !strings.Contains(mustRead(t, "LICENSE"), "APPENDIX: How to apply the Apache License") {
		t.Error("LICENSE is not the full Apache-2.0 text")
	}
}

func mustRead(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestClassify checks the recogniser on the texts it must tell apart.
func TestClassify(t *testing.T) {
	for text, want := range map[string]string{
		"Permission is hereby granted, free of charge, to any person":                          "MIT",
		"Redistribution and use in source and binary forms ... Redistributions in binary form": "BSD-2-Clause",
		"Redistribution and use in source and binary forms ... Neither the name of":            "BSD-3-Clause",
		"GNU GENERAL PUBLIC LICENSE Version 3":                                                 "",
	} {
		if got := classify(text); got != want {
			t.Errorf("classify(%q) = %q, want %q", text, got, want)
		}
	}
}
