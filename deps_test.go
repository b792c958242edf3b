package main_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The import rules of the module (STYLE.md rules 2 and 20, issue #16), in
// the manner of tailscale's tstest/deptest: one package owns each outside
// dependency, the engine packages know nothing of HTTP, and the API layers
// do not reach into the store. Every rule is about direct imports of the
// code that ships (test files are free), read with go list under each set
// of build tags the Makefile builds with. A broken rule names the package,
// the file and the import.

// module is the import path of this module.
const module = "github.com/synapse-edge/synapse"

// ruleTags are the tag sets the Makefile builds with (TAGS, TAGS+GRPC_TAGS).
var ruleTags = []string{"nethttpomithttp2", "nethttpomithttp2,grpc,grpcnotrace"}

// onlyImporter: only the packages in owners (relative to the module) may
// import dep or a package under it. A new package that needs one of them
// is added here, with why.
type onlyImporter struct {
	dep    string
	owners []string
	why    string
}

var onlyImporters = []onlyImporter{
	// Only store and its own subpackages (store/kv, its layered view over
	// the file; store/compact, which rewrites a stopped agent's file):
	// the domains keep their records through store.Records (issue 31).
	// bench/tier1 is a module of its own (the bbolt ceiling the tier-1
	// benchmarks measure against), outside go list ./... and these rules.
	{"go.etcd.io/bbolt", []string{"store/..."}, "store owns the file format; the domains keep their records through store.Records"},
	{"github.com/vmihailenco/msgpack/v5", []string{"wire"}, "wire owns the codecs"},
	{"golang.org/x/crypto/chacha20poly1305", []string{"wire/encrypt"}, "wire/encrypt owns payload encryption"},
	{"github.com/valyala/fasthttp", []string{"httpapi", "a2a/a2ahttp", "internal/sse", "transport/httptransport"},
		"httpapi is the server, a2a/a2ahttp the A2A binding it mounts, internal/sse their streamed answers; the HTTP transport the one HTTP client of the agent"},
	// A separate library (it upgrades net/http and fasthttp connections):
	// the server upgrades in httpapi, the Go client dials in client, and
	// the command line goes through the client.
	{"github.com/fasthttp/websocket", []string{"httpapi", "client", "transport/wstransport"},
		"httpapi upgrades, client dials, transport/wstransport dials the tier-1 uplink; the CLI goes through client"},
	{"github.com/eclipse/paho.mqtt.golang", []string{"transport/mqtt"}, "transport/mqtt is the one MQTT client"},
	// The engine starts no processes: the configured commands are package
	// handlers' job.
	{"os/exec", []string{"handlers", "client/agenttest", "transport/mqtt/mqtttest", "internal/selfupdate"},
		"handlers runs the configured commands; the test harnesses start the agent and the broker; internal/selfupdate runs a new release's --version before it swaps it in"},
	// So agent, tier1, negotiate, hil, group (and every other package of
	// the engine, the seam and the APIs) import no net/http.
	{"net/http", []string{"transport/httptransport", "transport/wstransport", "transport/a2aclient", "client", "client/agenttest", "internal/testutil/hooktest", "cli/command", "grpcapi", "internal/selfupdate"},
		"bytes go out through the transport seam's wires (HTTP, WebSocket, A2A); client is the Go client of the REST API, " +
			"client/agenttest its test harness, internal/testutil/hooktest the webhook of the tests, cli/command the command line's requests that client has no method for, " +
			"grpcapi maps the registry's HTTP statuses onto gRPC codes, internal/selfupdate downloads a release (synapse update --url, the broker's update command)"},
}

// leafPackages import no package of the module: every other package may
// build on them. wire is the protocol's types and codecs; what builds on
// them (payload encryption, wire/encrypt) is a package of its own.
// internal/clock is the time the engine and the outbox share, so that
// neither calls into the other for it.
var leafPackages = []string{"wire", "internal/clock"}

// matchPkg tells whether the package name (module-relative) is pattern:
// the same path, or one under it when pattern ends in "/...".
func matchPkg(pattern, name string) bool {
	if p, ok := strings.CutSuffix(pattern, "/..."); ok {
		return name == p || strings.HasPrefix(name, p+"/")
	}
	return pattern == name
}

// notImporting: pkg (every package under it, for a pkg ending in
// "/...") imports none of deps (module packages, and those
// under them), with why.
var notImporting = []struct {
	pkg  string
	deps []string
	why  string
}{
	// agent is the engine (issue 31): the command builds the network
	// wires and tier 1 and passes them in (agent.Options.Transport,
	// agent.Options.Tier1), as litestream's command builds its replica
	// clients.
	{"agent/...", []string{"transport/httptransport", "transport/wstransport", "transport/netwire", "transport/mqtt", "transport/a2aclient", "tier1"},
		"agent is the engine: the command builds the wires (transport/netwire) and tier 1 (tier1.Service) and passes them in (agent.Options.Transport, agent.Options.Tier1)"},
	{"registry", []string{"agent", "peer", "contracts"},
		"the directory needs only the store, the agent's id, its clock and the pinned keys (registry.Options), the registrar the agent's declaration, key, clock and transport (registry.RegistrarOptions); peer builds both"},
	{"outbox", []string{"agent", "peer", "contracts"},
		"the outbox's records and queue serve peers, webhooks and A2A push alike: it knows the store, the transport and the wire, not who sends"},
	{"contracts", []string{"transport/httptransport", "transport/wstransport", "transport/netwire", "transport/mqtt", "transport/a2aclient", "transport/outbound", "registry"},
		"contracts is a filter (Seal before send, Admit on receive) and sends nothing: the negotiations it needs run in peer, over the network's send"},
	// The wires carry bytes (issue 31): what a message becomes is the
	// domain's (the MQTT southbound mapping is tier1/southbound's, which
	// subscribes through the transport), and what a wire must remember is
	// kept through an interface the command fills (transport/a2aclient's
	// Ledger: a2a.Ledger over the store). Package a2a, the A2A protocol's
	// types, is the A2A client's to use, as wire is every wire's.
	{"transport/...", []string{"agent", "store", "tier1", "peer", "contracts", "outbox", "registry", "group", "hil", "httpapi", "grpcapi", "negotiate", "handlers"},
		"a wire delivers messages and knows no domain: the domain subscribes or sends through it"},
	{"transport/a2aclient", []string{"client"},
		"the A2A client is a wire of the agent, not a user of the REST API: server-sent events are read by internal/eventstream"},
	{"cli/remoteconfig/desired", []string{"agent", "store", "transport", "cli/config", "cli/reload", "peer", "httpapi"},
		"the remote config documents are a wire format the command line shares: the agent's side is cli/remoteconfig"},
}

// apiPackages are the API layers (REST, gRPC, the A2A methods and their
// HTTP binding): they decode, call a service method and encode. They
// neither import store nor call a Store() method, except in the files of
// apiStoreFiles. (Package a2a is not one: it holds the A2A types and their
// mapping onto tasks, below agent, which imports it.)
var apiPackages = []string{"httpapi", "grpcapi", "a2a/a2asrv", "a2a/a2ahttp"}

// apiStoreFiles are the files (module-relative) of API packages allowed
// to use the store directly, with why.
var apiStoreFiles = map[string]string{
	"httpapi/admin.go": "the admin backup and check routes are about the file itself",
}

// commandPackages are the command groups of the command line: they talk
// to an agent through client and cli/command, and of the module they
// import only commandImports; the engine, the servers and the transports
// are serve's, wired in cli.
var commandPackages = []string{"cli/command", "cli/taskcmd", "cli/admincmd", "cli/tier1cmd", "cli/peercmd", "cli/groupcmd", "cli/hilcmd", "cli/configcmd"}

// commandImports are the module packages a command package may import, with why.
var commandImports = map[string]string{
	"cli/command":              "the framework of the command line",
	"cli/config":               "config check reads the file as serve does",
	"cli/remoteconfig/desired": "config keygen and sign make operator keys and the desired documents the agent takes",
	"client":                   "the Go client of the REST API",
	"client/tier1export":       "tier1 export writes the frames",
	"client/tier1load":         "tier1 send generates the load",
	"internal/atomicfile":      "db backup and tier1 export write their file whole or not at all",
	"internal/tlscert":         "--cacert and --fingerprint make the client's TLS configuration (pinned or from a CA file)",
	"wire":                     "the API prefix and the token scopes",
	"store":                    "db and audit open the data file when no agent serves it",
	"store/compact":            "db compact rewrites a stopped agent's file",
	"agent/auditdb":            "db audit verifies the audit chain of a file no agent serves",
	"negotiate":                "negotiate parses tiers, transports and security levels",
	"group":                    "group and vote decode the agent's group types",
}

func TestImportRules(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	pkgs := listModule(t)
	for _, p := range []string{"agent", "store", "wire", "httpapi"} {
		if _, ok := pkgs[module+"/"+p]; !ok {
			t.Fatalf("go list found no %s among %d packages: not the synapse module?", p, len(pkgs))
		}
	}
	for _, v := range checkRules(pkgs) {
		t.Error(v)
	}
}

// TestImportRulesCatch shows that each kind of rule fails on a broken
// package, and names the file and the import.
func TestImportRulesCatch(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return name
	}
	bad := map[string]*listedPackage{
		module + "/tier1": {ImportPath: module + "/tier1", Dir: dir,
			Imports: []string{"go.etcd.io/bbolt", "net/http"},
			GoFiles: []string{write("uplink.go", "package tier1\nimport (\n\t\"net/http\"\n\tbolt \"go.etcd.io/bbolt\"\n)\n")}},
		// A name that only starts like store is not under it; a new
		// subpackage of store is.
		module + "/storex": {ImportPath: module + "/storex", Dir: dir,
			Imports: []string{"go.etcd.io/bbolt"},
			GoFiles: []string{write("db.go", "package storex\nimport bolt \"go.etcd.io/bbolt\"\n")}},
		module + "/store/newsub": {ImportPath: module + "/store/newsub", Dir: dir,
			Imports: []string{"go.etcd.io/bbolt"},
			GoFiles: []string{write("file.go", "package newsub\nimport bolt \"go.etcd.io/bbolt\"\n")}},
		module + "/cli": {ImportPath: module + "/cli", Dir: dir,
			Imports: []string{"github.com/fasthttp/websocket", "github.com/valyala/fasthttp/fasthttputil"},
			GoFiles: []string{write("send.go", "package cli\nimport \"github.com/fasthttp/websocket\"\nimport _ \"github.com/valyala/fasthttp/fasthttputil\"\n")}},
		module + "/grpcapi": {ImportPath: module + "/grpcapi", Dir: dir,
			Imports: []string{module + "/store"},
			GoFiles: []string{write("tasks.go", "package grpcapi\nimport \""+module+"/store\"\nvar _ store.Tx\n"),
				write("groups.go", "package grpcapi\nfunc f(s interface{ Store() int }) int { return s.Store() }\n")}},
		module + "/wire": {ImportPath: module + "/wire", Dir: dir,
			Imports: []string{module + "/wire/encrypt", "golang.org/x/crypto/chacha20poly1305"},
			GoFiles: []string{write("seal.go", "package wire\nimport \""+module+"/wire/encrypt\"\nimport \"golang.org/x/crypto/chacha20poly1305\"\n")}},
		module + "/internal/clock": {ImportPath: module + "/internal/clock", Dir: dir,
			Imports: []string{module + "/agent"},
			GoFiles: []string{write("clock.go", "package clock\nimport \""+module+"/agent\"\nvar _ agent.Clock\n")}},
		module + "/registry": {ImportPath: module + "/registry", Dir: dir,
			Imports: []string{module + "/peer", module + "/store"},
			GoFiles: []string{write("dir.go", "package registry\nimport \""+module+"/peer\"\nimport \""+module+"/store\"\n")}},
		module + "/outbox": {ImportPath: module + "/outbox", Dir: dir,
			Imports: []string{module + "/contracts", module + "/store"},
			GoFiles: []string{write("deliver.go", "package outbox\nimport \""+module+"/contracts\"\nimport \""+module+"/store\"\n")}},
		module + "/contracts": {ImportPath: module + "/contracts", Dir: dir,
			Imports: []string{module + "/transport/httptransport", module + "/wire"},
			GoFiles: []string{write("request.go", "package contracts\nimport \""+module+"/transport/httptransport\"\nimport \""+module+"/wire\"\n")}},
		module + "/transport/mqtt": {ImportPath: module + "/transport/mqtt", Dir: dir,
			Imports: []string{module + "/tier1/southbound", module + "/wire"},
			GoFiles: []string{write("south.go", "package mqtt\nimport \""+module+"/tier1/southbound\"\nimport \""+module+"/wire\"\n")}},
		module + "/agent": {ImportPath: module + "/agent", Dir: dir,
			Imports: []string{module + "/transport", module + "/transport/httptransport"},
			GoFiles: []string{write("transport.go", "package agent\nimport \""+module+"/transport\"\nimport \""+module+"/transport/httptransport\"\n")}},
		// tier1 and the packages under it alike; agent/idemdb is under
		// agent.
		module + "/agent/idemdb": {ImportPath: module + "/agent/idemdb", Dir: dir,
			Imports: []string{module + "/tier1/export", module + "/store"},
			GoFiles: []string{write("idem.go", "package idemdb\nimport \""+module+"/store\"\nimport \""+module+"/tier1/export\"\n")}},
		module + "/cli/hilcmd": {ImportPath: module + "/cli/hilcmd", Dir: dir,
			Imports: []string{module + "/client", module + "/hil"},
			GoFiles: []string{write("hil.go", "package hilcmd\nimport \""+module+"/hil\"\nimport \""+module+"/client\"\n")}},
	}
	got := strings.Join(checkRules(bad), "\n")
	for _, want := range []string{
		"tier1 imports go.etcd.io/bbolt (uplink.go); only store/... may: store owns the file format; the domains keep their records through store.Records",
		"storex imports go.etcd.io/bbolt (db.go); only store/... may",
		"tier1 imports net/http (uplink.go); only transport/httptransport, transport/wstransport, transport/a2aclient, client, client/agenttest, internal/testutil/hooktest, cli/command, grpcapi, internal/selfupdate may",
		"cli imports github.com/fasthttp/websocket (send.go); only httpapi, client, transport/wstransport may",
		"cli imports github.com/valyala/fasthttp/fasthttputil (send.go); only httpapi, a2a/a2ahttp, internal/sse, transport/httptransport may",
		"grpcapi imports store (tasks.go): API packages",
		"grpcapi calls Store() (groups.go:2): API packages",
		"cli/hilcmd imports hil (hil.go): a command package talks to agents through client",
		"wire imports wire/encrypt (seal.go): wire is a leaf of the module",
		"internal/clock imports agent (clock.go): internal/clock is a leaf of the module",
		"registry imports peer (dir.go): the directory needs only the store",
		"outbox imports contracts (deliver.go): the outbox's records and queue serve peers, webhooks and A2A push alike",
		"transport/mqtt imports tier1/southbound (south.go): a wire delivers messages and knows no domain",
		"contracts imports transport/httptransport (request.go): contracts is a filter",
		"agent imports transport/httptransport (transport.go): agent is the engine",
		"agent/idemdb imports tier1/export (idem.go): agent is the engine",
		"wire imports golang.org/x/crypto/chacha20poly1305 (seal.go); only wire/encrypt may: wire/encrypt owns payload encryption",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no violation %q in:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\n") + 1; n != 17 {
		t.Errorf("%d violations, want 17:\n%s", n, got)
	}
}

// TestPackageDocs: every package has a doc comment (STYLE.md rule 3, as
// tailscale's pkgdoc_test.go); a library package's opens with "Package
// NAME".
func TestPackageDocs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, v := range docProblems(listModule(t)) {
		t.Error(v)
	}
	bad := map[string]*listedPackage{
		module + "/store":  {ImportPath: module + "/store", Name: "store", GoFiles: []string{"db.go"}},
		module + "/wire":   {ImportPath: module + "/wire", Name: "wire", GoFiles: []string{"a.go"}, Doc: "Wire types."},
		module + "/tier1":  {ImportPath: module + "/tier1", Name: "tier1", GoFiles: []string{"a.go"}, Doc: "Package tier1 ingests."},
		module + "/cmd/x":  {ImportPath: module + "/cmd/x", Name: "main", GoFiles: []string{"main.go"}, Doc: "X does it."},
		module + "/e2e":    {ImportPath: module + "/e2e", Name: "e2e"},
		module + "/client": {ImportPath: module + "/client", Name: "client", GoFiles: []string{"c.go"}, Doc: "Package clientx is."},
	}
	got := strings.Join(docProblems(bad), "\n")
	want := "client: the package doc opens \"Package clientx is.\", not \"Package client \"\n" +
		"store: no package doc comment\n" +
		"wire: the package doc opens \"Wire types.\", not \"Package wire \""
	if got != want {
		t.Errorf("docProblems of broken packages:\n%s\nwant:\n%s", got, want)
	}
}

// docProblems returns one line per package of the module without a doc
// comment, or whose doc does not open with "Package NAME" (commands: any
// doc); packages of test files only are free.
func docProblems(pkgs map[string]*listedPackage) []string {
	var out []string
	for _, p := range pkgs {
		name := rel(p.ImportPath)
		if name == "" || len(p.GoFiles) == 0 {
			continue
		}
		switch {
		case strings.TrimSpace(p.Doc) == "":
			out = append(out, name+": no package doc comment")
		case p.Name != "main" && !strings.HasPrefix(p.Doc, "Package "+p.Name+" ") && !strings.HasPrefix(p.Doc, "Package "+p.Name+","):
			first, _, _ := strings.Cut(p.Doc, "\n")
			out = append(out, fmt.Sprintf("%s: the package doc opens %q, not %q", name, first, "Package "+p.Name+" "))
		}
	}
	sort.Strings(out)
	return out
}

// listedPackage is what go list -json says of a package.
type listedPackage struct {
	Name       string
	Doc        string
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
}

// listed is listModule's answer, kept for the next test (they do not run
// in parallel).
var listed map[string]*listedPackage

// listModule runs go list -json ./... under every tag set of ruleTags and
// merges the answers: a package's files and imports are the union.
func listModule(t *testing.T) map[string]*listedPackage {
	t.Helper()
	if listed != nil {
		return listed
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	all := map[string]*listedPackage{}
	for _, tags := range ruleTags {
		cmd := exec.Command(goBin, "list", "-e", "-json", "-tags", tags, "./...")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -tags %s ./...: %v\n%s", tags, err, stderr.Bytes())
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var p listedPackage
			if err := dec.Decode(&p); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("go list -json: %v", err)
			}
			q := all[p.ImportPath]
			if q == nil {
				all[p.ImportPath] = &p
				continue
			}
			q.GoFiles = union(q.GoFiles, p.GoFiles)
			q.Imports = union(q.Imports, p.Imports)
			if q.Doc == "" {
				q.Doc = p.Doc
			}
		}
	}
	listed = all
	return all
}

func union(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// rel is a module package's path relative to the module ("" outside it).
func rel(importPath string) string {
	if importPath == module {
		return "."
	}
	r, ok := strings.CutPrefix(importPath, module+"/")
	if !ok {
		return ""
	}
	return r
}

// under reports whether path is dep or a package under it.
func under(path, dep string) bool { return path == dep || strings.HasPrefix(path, dep+"/") }

// checkRules returns one line per broken rule, sorted.
func checkRules(pkgs map[string]*listedPackage) []string {
	var out []string
	for _, p := range pkgs {
		name := rel(p.ImportPath)
		if name == "" {
			continue
		}
		for _, imp := range p.Imports {
			for _, r := range onlyImporters {
				if under(imp, r.dep) && !owns(r.owners, name) {
					out = append(out, fmt.Sprintf("%s imports %s (%s); only %s may: %s",
						name, imp, filesImporting(p, imp), strings.Join(r.owners, ", "), r.why))
				}
			}
		}
		if slices.Contains(leafPackages, name) {
			for _, imp := range p.Imports {
				if r := rel(imp); r != "" {
					out = append(out, fmt.Sprintf("%s imports %s (%s): %s is a leaf of the module, what builds on it is another package",
						name, r, filesImporting(p, imp), name))
				}
			}
		}
		for _, r := range notImporting {
			for _, imp := range p.Imports {
				if matchPkg(r.pkg, name) && slices.ContainsFunc(r.deps, func(d string) bool { return under(imp, module+"/"+d) }) {
					out = append(out, fmt.Sprintf("%s imports %s (%s): %s", name, rel(imp), filesImporting(p, imp), r.why))
				}
			}
		}
		if slices.Contains(apiPackages, name) {
			out = append(out, storeUses(p, name)...)
		}
		if slices.Contains(commandPackages, name) {
			for _, imp := range p.Imports {
				if r := rel(imp); r != "" && commandImports[r] == "" {
					out = append(out, fmt.Sprintf("%s imports %s (%s): a command package talks to agents through client; serve (cli) wires the engine",
						name, r, filesImporting(p, imp)))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// owns reports whether name is one of owners, where an owner "pkg/..."
// is pkg and every package under it.
func owns(owners []string, name string) bool {
	return slices.ContainsFunc(owners, func(o string) bool {
		if tree, ok := strings.CutSuffix(o, "/..."); ok {
			return under(name, tree)
		}
		return o == name
	})
}

// filesImporting names the files of p that import imp.
func filesImporting(p *listedPackage, imp string) string {
	var names []string
	for _, f := range p.GoFiles {
		af, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, f), nil, parser.ImportsOnly)
		if err != nil {
			names = append(names, f+": "+err.Error())
			continue
		}
		for _, s := range af.Imports {
			if path, _ := strconv.Unquote(s.Path.Value); path == imp {
				names = append(names, f)
			}
		}
	}
	return strings.Join(names, ", ")
}

// storeUses lists the files of API package p, not in apiStoreFiles, that
// import store or call a Store() method.
func storeUses(p *listedPackage, name string) []string {
	var out []string
	const why = "API packages decode, call a service method and encode; only the files named in apiStoreFiles touch the store"
	for _, f := range p.GoFiles {
		if _, ok := apiStoreFiles[name+"/"+f]; ok {
			continue
		}
		fset := token.NewFileSet()
		af, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, 0)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		for _, s := range af.Imports {
			if path, _ := strconv.Unquote(s.Path.Value); path == module+"/store" {
				out = append(out, fmt.Sprintf("%s imports store (%s): %s", name, f, why))
			}
		}
		ast.Inspect(af, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok || len(c.Args) != 0 {
				return true
			}
			if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Store" {
				out = append(out, fmt.Sprintf("%s calls Store() (%s:%d): %s", name, f, fset.Position(c.Pos()).Line, why))
			}
			return true
		})
	}
	return out
}
