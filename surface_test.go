package main_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The size of the types that know too much (issue 31, must-show 1): a type
// whose method count grows past its limit fails here. Methods are counted
// with go/types over the packages' export data (go list -export, as
// go/packages does): the method set of *T, promoted methods included,
// exported and unexported alike.
//
// A limit the code does not meet yet, because the moves that bring it
// down are other branches' work, is held at today's count in
// surfaceExcess: the test prints every excess it holds (it never skips),
// and fails as soon as a count grows past either number. When a move
// lands, its entry goes down with it (or out, once the limit
// holds); the limits themselves do not move.

// surfaceLimit is the limit on the methods of a type, by
// module-relative package and type name ("*" for every named type of the
// package).
var surfaceLimits = []struct {
	pkg, typ string
	max      int
	why      string
}{
	// store.Tx: 32 since tier-1's records left for package tier1. A2A's
	// push configs (5) are still the store's: they wait for a hook that
	// deletes a task's push configs with it.
	{"store", "Tx", 40, "store keeps storage: bbolt's own Tx has 39 methods; the domains' records live in the domains, through store.Records"},
	{"httpapi", "Server", 60, "routes, not service logic"},
	{"peer", "*", 40, "peer keeps pairing and the peer protocol; the outbox and the registry are packages of their own"},
	{"outbox", "*", 40, "the outbox is its records and its queue; the peer protocol is behind outbox.Peers"},
}

// surfaceExcess holds the counts above a limit that other branches of
// issue 31 bring down, at their value today: a count may fall, never grow.
// key: "pkg.Type".
var surfaceExcess = map[string]struct {
	count int
	who   string
}{}

// agentExportedMax is agent's exported surface (issue 31: no larger
// than it was, 145, when the issue was filed; 137 since one Submit): its
// exported package-level names plus the exported methods of its exported
// types.
const agentExportedMax = 137

// TestTypeSizes holds the named types under their method limits and agent
// under its exported surface.
func TestTypeSizes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list -export")
	}
	pkgs := loadTypes(t, "store", "httpapi", "peer", "outbox", "agent")
	counts := map[string]int{}
	for _, l := range surfaceLimits {
		p := pkgs[l.pkg]
		for _, name := range typeNames(t, p, l.typ) {
			counts[l.pkg+"."+name] = methodCount(p.Scope().Lookup(name).Type(), false)
		}
	}
	for _, v := range surfaceProblems(counts) {
		t.Error(v)
	}
	for _, key := range slices.Sorted(maps.Keys(surfaceExcess)) {
		x := surfaceExcess[key]
		t.Logf("known excess: %s has %d methods (held at %d): %s", key, counts[key], x.count, x.who)
	}
	n := exportedSurface(pkgs["agent"])
	t.Logf("agent: exported surface %d (held at %d)", n, agentExportedMax)
	if n > agentExportedMax {
		t.Errorf("agent's exported surface is %d, over %d (issue 31: no larger than it was): move the new names to the package whose job they are", n, agentExportedMax)
	}
}

// surfaceProblems returns one line per type over its limit (or over its
// held excess), sorted.
func surfaceProblems(counts map[string]int) []string {
	var out []string
	for _, l := range surfaceLimits {
		for key, n := range counts {
			pkg, typ, _ := strings.Cut(key, ".")
			if pkg != l.pkg || (l.typ != "*" && typ != l.typ) {
				continue
			}
			max := l.max
			if x, ok := surfaceExcess[key]; ok {
				max = x.count
			}
			if n > max {
				out = append(out, fmt.Sprintf("%s has %d methods, over %d (limit %d: %s)", key, n, max, l.max, l.why))
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestTypeSizesCatch shows that a type growing past its limit, or past
// its held excess, fails, and that one at its limit passes.
func TestTypeSizesCatch(t *testing.T) {
	got := strings.Join(surfaceProblems(map[string]int{
		"store.Tx":       41,
		"httpapi.Server": 61,
		"peer.Pairing":   41,
		"peer.Inbound":   40,
	}), "\n")
	want := fmt.Sprintf("httpapi.Server has 61 methods, over 60 (limit 60: %s)\n"+
		"peer.Pairing has 41 methods, over 40 (limit 40: %s)\n"+
		"store.Tx has 41 methods, over 40 (limit 40: %s)",
		surfaceLimits[1].why, surfaceLimits[2].why, surfaceLimits[0].why)
	if got != want {
		t.Errorf("surfaceProblems:\n%s\nwant:\n%s", got, want)
	}
	for key, x := range surfaceExcess {
		pkg, typ, _ := strings.Cut(key, ".")
		found := false
		for _, l := range surfaceLimits {
			if l.pkg == pkg && (l.typ == typ || l.typ == "*") {
				found = true
				if x.count <= l.max {
					t.Errorf("surfaceExcess holds %s at %d, within its limit %d: remove the entry", key, x.count, l.max)
				}
			}
		}
		if !found {
			t.Errorf("surfaceExcess holds %s, which has no limit", key)
		}
	}
}

// filterPackages are the packages that are filters on the path of a
// message (issue 31: contracts sealed before send and admitted on
// receive), with why: they declare no interface, so that nothing they
// are handed calls back into the package that calls them.
var filterPackages = map[string]string{
	"contracts": "contracts is a filter the network calls once each way (Seal, Admit); the negotiations it needs run in peer, over the network's send",
}

// TestFilterPackages holds the filter packages without interfaces.
func TestFilterPackages(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list -export")
	}
	pkgs := loadTypes(t, slices.Sorted(maps.Keys(filterPackages))...)
	for rel, why := range filterPackages {
		for _, v := range interfaceTypes(pkgs[rel]) {
			t.Errorf("%s declares interface %s: %s", rel, v, why)
		}
	}
}

// TestFilterPackagesCatch: a filter package that declares an interface
// is found.
func TestFilterPackagesCatch(t *testing.T) {
	p := types.NewPackage(module+"/contracts", "contracts")
	send := types.NewFunc(0, p, "Send", types.NewSignatureType(nil, nil, nil, nil, nil, false))
	iface := types.NewInterfaceType([]*types.Func{send}, nil)
	iface.Complete()
	p.Scope().Insert(types.NewTypeName(0, p, "Network", iface))
	p.Scope().Insert(types.NewTypeName(0, p, "Peer", types.NewStruct(nil, nil)))
	if got := interfaceTypes(p); !slices.Equal(got, []string{"Network"}) {
		t.Errorf("interfaceTypes = %v, want [Network]", got)
	}
}

// interfaceTypes are the interface types p declares, sorted.
func interfaceTypes(p *types.Package) []string {
	var out []string
	for _, name := range p.Scope().Names() {
		if tn, ok := p.Scope().Lookup(name).(*types.TypeName); ok && types.IsInterface(tn.Type()) {
			out = append(out, name)
		}
	}
	return out
}

// typeNames returns typ, or with "*" every named type of p, sorted.
func typeNames(t *testing.T, p *types.Package, typ string) []string {
	t.Helper()
	if typ != "*" {
		if _, ok := p.Scope().Lookup(typ).(*types.TypeName); !ok {
			t.Fatalf("%s has no type %s", p.Path(), typ)
		}
		return []string{typ}
	}
	var out []string
	for _, name := range p.Scope().Names() {
		if tn, ok := p.Scope().Lookup(name).(*types.TypeName); ok && !tn.IsAlias() {
			out = append(out, name)
		}
	}
	return out
}

// methodCount is the size of the method set of *T (only the exported
// methods when exported).
func methodCount(T types.Type, exported bool) int {
	if _, ok := T.Underlying().(*types.Interface); ok {
		return 0 // an interface's methods are a contract, not a surface
	}
	ms := types.NewMethodSet(types.NewPointer(T))
	n := 0
	for m := range ms.Methods() {
		if !exported || m.Obj().Exported() {
			n++
		}
	}
	return n
}

// exportedSurface counts p's exported package-level names and the
// exported methods of its exported named types.
func exportedSurface(p *types.Package) int {
	n := 0
	for _, name := range p.Scope().Names() {
		obj := p.Scope().Lookup(name)
		if !obj.Exported() {
			continue
		}
		n++
		if tn, ok := obj.(*types.TypeName); ok && !tn.IsAlias() {
			n += methodCount(tn.Type(), true)
		}
	}
	return n
}

// loadTypes type-checks nothing itself: it reads the export data of the
// named module packages (relative paths) that go list -export builds.
func loadTypes(t *testing.T, rels ...string) map[string]*types.Package {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	args := []string{"list", "-export", "-deps", "-json=ImportPath,Export", "-tags", ruleTags[len(ruleTags)-1]}
	for _, r := range rels {
		args = append(args, "./"+r)
	}
	cmd := exec.Command(goBin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v\n%s", err, stderr.Bytes())
	}
	exports := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list -json: %v", err)
		}
		exports[p.ImportPath] = p.Export
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f := exports[path]
		if f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	pkgs := map[string]*types.Package{}
	for _, r := range rels {
		p, err := imp.Import(module + "/" + r)
		if err != nil {
			t.Fatalf("import %s: %v", r, err)
		}
		pkgs[r] = p
	}
	return pkgs
}
