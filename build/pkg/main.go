// Package main is the command pkg: it builds the Debian (.deb) and OpenWrt (.ipk) packages of a
// release with nfpm, from the static binaries of make dist. It is a module
// of its own so that nfpm never enters the agent's build list:
//
//	cd build/pkg && go run . -version v1.2.3 -bin DIR -out DIR
//
// DIR holds synapse-linux-ARCH binaries (make cross's names). Each .deb
// (amd64, arm64, armhf) installs /usr/bin/synapse, the hardened unit of
// build/synapse.service (for /usr/bin and /etc/synapse/config.json), the
// conffile /etc/synapse/config.json, the system user synapse and
// /var/lib/synapse; purge removes the data, the configuration and the
// user. Each .ipk (mipsel_24kc, mips_24kc) installs the binary, the
// conffile and a procd init script. synapse-VERSION-oci.tar is an OCI
// layout: one image FROM scratch per binary of DIR (the static binary,
// run as 65532:65532) and a multi-arch index over them.
package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
	_ "github.com/goreleaser/nfpm/v2/ipk"
)

// target is one package: the binary it takes and the architecture name
// the package format uses for it.
type target struct {
	format, bin, arch string
}

// pkgTime is the time of every file in the packages and the image:
// fixed, so that they are reproducible.
var pkgTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var targets = []target{
	{"deb", "synapse-linux-amd64", "amd64"},
	{"deb", "synapse-linux-arm64", "arm64"},
	{"deb", "synapse-linux-armv7", "armhf"},
	{"ipk", "synapse-linux-mipsle", "mipsel_24kc"},
	{"ipk", "synapse-linux-mips", "mips_24kc"},
}

func main() {
	version := flag.String("version", "", "release version (vX.Y.Z or scripts/version.sh's form)")
	binDir := flag.String("bin", "", "directory with the synapse-linux-ARCH binaries")
	outDir := flag.String("out", "", "directory the packages are written to")
	root := flag.String("root", "../..", "the repository's root")
	flag.Parse()
	if err := run(*version, *binDir, *outDir, *root); err != nil {
		fmt.Fprintln(os.Stderr, "pkg:", err)
		os.Exit(1)
	}
}

func run(version, binDir, outDir, root string) error {
	if version == "" || binDir == "" || outDir == "" {
		return errors.New("usage: pkg -version V -bin DIR -out DIR")
	}
	work, err := os.MkdirTemp("", "synapse-pkg")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	unit, err := debUnit(root, work)
	if err != nil {
		return err
	}
	changelog, err := gzipFile(filepath.Join(root, "CHANGELOG.md"), filepath.Join(work, "changelog.gz"))
	if err != nil {
		return err
	}
	for _, t := range targets {
		bin := filepath.Join(binDir, t.bin)
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("%s: %w", t.bin, err)
		}
		info := packageInfo(t, version, bin, root, unit, changelog)
		name, err := build(info, t.format, outDir)
		if err != nil {
			return fmt.Errorf("%s %s: %w", t.format, t.arch, err)
		}
		fmt.Println(name)
	}
	name, err := buildOCI(version, binDir, outDir, work)
	if err != nil {
		return fmt.Errorf("oci: %w", err)
	}
	fmt.Println(name)
	return nil
}

// debUnit writes the repository's unit as the package installs it: the
// binary in /usr/bin and the configuration file passed.
func debUnit(root, work string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "build", "synapse.service"))
	if err != nil {
		return "", err
	}
	const from = "ExecStart=/usr/local/bin/synapse serve --data /var/lib/synapse --listen 127.0.0.1:8080"
	s := string(b)
	if !strings.Contains(s, from) {
		return "", fmt.Errorf("build/synapse.service has no line %q", from)
	}
	s = strings.Replace(s, from, "ExecStart=/usr/bin/synapse serve --data /var/lib/synapse --listen 127.0.0.1:8080 --config /etc/synapse/config.json", 1)
	s = strings.Replace(s, "build/install.sh installs it as\n# /etc/systemd/system/synapse.service together with /usr/local/bin/synapse.",
		"The Debian package installs it with\n# /usr/bin/synapse and /etc/synapse/config.json.", 1)
	path := filepath.Join(work, "synapse.service")
	return path, os.WriteFile(path, []byte(s), 0o644)
}

func packageInfo(t target, version, bin, root, unit, changelog string) *nfpm.Info {
	here := func(name string) string { return filepath.Join(root, "build", "pkg", name) }
	contents := files.Contents{
		{Source: bin, Destination: "/usr/bin/synapse", FileInfo: &files.ContentFileInfo{Mode: 0o755}},
		{Source: filepath.Join(root, "build", "config.example.json"), Destination: "/etc/synapse/config.json",
			Type: files.TypeConfig, FileInfo: &files.ContentFileInfo{Mode: 0o640}},
	}
	info := &nfpm.Info{
		Name:        "synapse",
		Arch:        t.arch,
		Platform:    "linux",
		Version:     version,
		Section:     "net",
		Priority:    "optional",
		Maintainer:  "Synapse maintainers <maintainers@synapse-edge.invalid>",
		Description: "edge agent of the Synapse protocol\nA static agent for gateways: tasks, peers, people in the loop, groups\nand tier-1 binary telemetry ingest into a local bbolt store.",
		Homepage:    "https://github.com/synapse-edge/synapse",
		License:     "Apache-2.0",
		MTime:       pkgTime,
	}
	switch t.format {
	case "deb":
		contents = append(contents,
			&files.Content{Source: unit, Destination: "/lib/systemd/system/synapse.service", FileInfo: &files.ContentFileInfo{Mode: 0o644}},
			&files.Content{Source: here("copyright"), Destination: "/usr/share/doc/synapse/copyright", FileInfo: &files.ContentFileInfo{Mode: 0o644}},
			&files.Content{Source: changelog, Destination: "/usr/share/doc/synapse/changelog.gz", FileInfo: &files.ContentFileInfo{Mode: 0o644}},
			&files.Content{Source: here("lintian-overrides"), Destination: "/usr/share/lintian/overrides/synapse", FileInfo: &files.ContentFileInfo{Mode: 0o644}},
		)
		info.Overridables = nfpm.Overridables{
			Depends:  []string{"passwd"},
			Contents: contents,
			Scripts: nfpm.Scripts{
				PostInstall: here("postinst.sh"),
				PreRemove:   here("prerm.sh"),
				PostRemove:  here("postrm.sh"),
			},
		}
	case "ipk":
		contents = append(contents,
			&files.Content{Source: here("synapse.init"), Destination: "/etc/init.d/synapse", FileInfo: &files.ContentFileInfo{Mode: 0o755}},
			&files.Content{Source: filepath.Join(root, "LICENSE"), Destination: "/usr/share/doc/synapse/LICENSE", FileInfo: &files.ContentFileInfo{Mode: 0o644}},
		)
		info.Overridables = nfpm.Overridables{Contents: contents}
	}
	return info
}

// gzipFile writes src gzipped (no name, no time: reproducible) to dst.
func gzipFile(src, dst string) (string, error) {
	b, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return "", err
	}
	if _, err := zw.Write(b); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	return dst, os.WriteFile(dst, buf.Bytes(), 0o644)
}

func build(info *nfpm.Info, format, outDir string) (string, error) {
	info = nfpm.WithDefaults(info)
	if err := nfpm.PrepareForPackager(info, format); err != nil {
		return "", err
	}
	p, err := nfpm.Get(format)
	if err != nil {
		return "", err
	}
	name := filepath.Join(outDir, p.ConventionalFileName(info))
	f, err := os.Create(name)
	if err != nil {
		return "", err
	}
	if err := p.Package(info, f); err != nil {
		f.Close()
		os.Remove(name)
		return "", err
	}
	return name, f.Close()
}
