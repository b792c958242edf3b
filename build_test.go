package main_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// defaultTags are the Makefile's TAGS for `make build`.
const defaultTags = "nethttpomithttp2"

// deps lists the packages the synapse binary links with the given tags.
func deps(t *testing.T, tags string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-tags", tags, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps -tags %s .: %v\n%s", tags, err, out)
	}
	return strings.Fields(string(out))
}

func linked(pkgs []string, prefix string) []string {
	var out []string
	for _, p := range pkgs {
		if p == prefix || strings.HasPrefix(p, prefix+"/") {
			out = append(out, p)
		}
	}
	return out
}

// TestDefaultBuildHasNoGRPC guards the size of the edge binary: gRPC is
// linked only with -tags grpc (SPEC §1), and then without
// golang.org/x/net/trace (grpcnotrace).
func TestDefaultBuildHasNoGRPC(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	t.Run("default", func(t *testing.T) {
		pkgs := deps(t, defaultTags)
		if !slices.Contains(pkgs, "github.com/synapse-edge/synapse/httpapi") {
			t.Fatalf("go list found no httpapi among %d packages: not the synapse binary?", len(pkgs))
		}
		for _, mod := range []string{"google.golang.org/grpc", "google.golang.org/protobuf", "github.com/synapse-edge/synapse/grpcapi"} {
			if got := linked(pkgs, mod); len(got) > 0 {
				t.Errorf("the default build links %s: %v", mod, got)
			}
		}
	})
	t.Run("grpc", func(t *testing.T) {
		pkgs := deps(t, defaultTags+",grpc,grpcnotrace")
		if got := linked(pkgs, "google.golang.org/grpc"); len(got) == 0 {
			t.Error("the grpc build links no google.golang.org/grpc package")
		}
		if !slices.Contains(pkgs, "github.com/synapse-edge/synapse/grpcapi") {
			t.Error("the grpc build does not link grpcapi")
		}
		if got := linked(pkgs, "golang.org/x/net/trace"); len(got) > 0 {
			t.Errorf("the grpc build links %v despite grpcnotrace", got)
		}
	})
}
