package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// imageUser is the numeric user and group the image runs as: not root,
// and no /etc/passwd needed in an image FROM scratch.
const imageUser = "65532:65532"

// platformOf maps a make cross binary name to its OCI platform.
func platformOf(bin string) (v1.Platform, bool) {
	arch := strings.TrimPrefix(bin, "synapse-linux-")
	switch arch {
	case "amd64", "mips", "mipsle", "riscv64":
		return v1.Platform{OS: "linux", Architecture: arch}, true
	case "arm64":
		return v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}, true
	case "armv6", "armv7":
		return v1.Platform{OS: "linux", Architecture: "arm", Variant: arch[3:]}, true
	}
	return v1.Platform{}, false
}

// buildOCI writes the multi-arch image of every binary in binDir as an OCI
// layout tarball: per platform an image FROM scratch holding /synapse and
// an empty /var/lib/synapse owned by imageUser, one index over them, named
// version in the layout's index.json.
func buildOCI(version, binDir, outDir, work string) (string, error) {
	bins, err := filepath.Glob(filepath.Join(binDir, "synapse-linux-*"))
	if err != nil {
		return "", err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	n := 0
	for _, bin := range bins {
		plat, ok := platformOf(filepath.Base(bin))
		if !ok {
			continue
		}
		img, err := image(bin, plat, version)
		if err != nil {
			return "", fmt.Errorf("%s: %w", filepath.Base(bin), err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &plat}})
		n++
	}
	if n == 0 {
		return "", fmt.Errorf("no synapse-linux-* binaries in %s", binDir)
	}
	dir := filepath.Join(work, "oci")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return "", err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": version})); err != nil {
		return "", err
	}
	name := filepath.Join(outDir, "synapse-"+version+"-oci.tar")
	return name, tarDir(dir, name)
}

func image(bin string, plat v1.Platform, version string) (v1.Image, error) {
	b, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "var/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "var/lib/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "var/lib/synapse/", Typeflag: tar.TypeDir, Mode: 0o700, Uid: 65532, Gid: 65532},
	} {
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: "synapse", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(b))}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(b); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerBytes := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = plat.OS, plat.Architecture, plat.Variant
	cf.Config.User = imageUser
	cf.Config.Entrypoint = []string{"/synapse"}
	cf.Config.Cmd = []string{"serve", "--data", "/var/lib/synapse", "--listen", "0.0.0.0:8080"}
	cf.Config.WorkingDir = "/var/lib/synapse"
	cf.Config.ExposedPorts = map[string]struct{}{"8080/tcp": {}}
	cf.Config.Volumes = map[string]struct{}{"/var/lib/synapse": {}}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":    "synapse",
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	return mutate.ConfigFile(img, cf)
}

// tarDir writes the files below dir into the tar file name, in name order.
func tarDir(dir, name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		h, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		h.Name, h.Uid, h.Gid, h.Uname, h.Gname = filepath.ToSlash(rel), 0, 0, "", ""
		h.ModTime = pkgTime
		if fi.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			_, err = tw.Write(b)
			return err
		}
		return nil
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
