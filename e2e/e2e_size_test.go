package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The footprint goal (issue 13) is a release binary of at most 8 MiB on
// arm64 and armv7; the guards below are ceilings that catch creep (a
// dependency that bloats the edge binary). Memory is judged by what a
// device pays for (issue 29): the anonymous memory the agent holds after
// work, not its idle file pages (the binary's own, clean and shared,
// which the kernel drops under pressure).
const goalBinary = 8 << 20

// maxBinary is the ceiling per GOARCH of the release binary: the size
// with TLS serving (issue 34), 2026-12-01 (amd64 12,198,050 B = 11.63 MiB,
// arm64 11,206,818 B = 10.69, armv7 11,600,034 B = 11.06: 312, 320 and
// 192 KiB over stop 25's 11.33, 10.38 and 10.88 MiB, the server side of
// crypto/tls and x509 certificate creation) plus 128 KiB or a little
// more, so a new dependency or a table built at start fails it. The goal,
// 8 MiB on ARM, is not met: bench/README.md#binary-size-and-idle-memory
// says what bounds it.
//
// The targets added for issue 33 have the same margin over their size
// with TLS serving (armv6 11,731,106 B = 11.19 MiB, mipsle and mips with
// GOMIPS=softfloat 13,304,001 B = 12.69, riscv64 10,813,602 B = 10.31;
// -grpc 14.31, 16.19 and 13.25 MiB). The MIPS binaries are the largest: soft-float code and the
// 32-bit instruction set.
//
// Stop 36 (2026-12-02) raised every ceiling by 384 KiB for what it
// added: the commit log and its layered view (store/commitlog, store/kv
// and google/btree, about 75 KB of symbols on amd64), the registry
// package, config reload (cli/reload), TLS pinning of peers, seed-003
// SendMessage and the peer refusals: amd64 12,247,202 → 12,570,786 B,
// mips 13,697,217 B; the margin left is 128 to 200 KiB.
//
// Self-update (issue 32: internal/selfupdate, cli/updatecmd,
// cli/remoteupdate and x/crypto/blake2b for minisign's prehashed
// signatures) added 184 KiB on amd64 (12,583,074 -> 12,771,490 B), 192 on
// armv7 (11,993,250 -> 12,189,858) and 128 on mips (13,697,217 ->
// 13,828,289): armv7 and the MIPS pair passed their ceilings by under
// 200 bytes, so theirs are 64 KiB (one step of their size) higher.
//
// The session that merged self-update also merged remote configuration
// (cli/remoteconfig), named tier-1 exports (tier1/export), the disk and
// memory budgets (tier1/disk.go, internal/memlimit), compact task records
// (store/taskrec), db stats and db compact (store/compact) and the
// clustered-broker client: each branch fitted its own ceilings, together
// they took amd64 from 12,583,074 to 13,148,322 B (+552 KiB), arm64 to
// 11,993,250, armv7 to 12,583,074, MIPS to 14,287,041 and riscv64 to
// 11,600,034 B. Each ceiling is now the size measured then plus 96 to
// 160 KiB, rounded up to 64 KiB, and the -grpc ones likewise.
//
// Stop 38 moved the domains' records out of store.Tx into packages of
// their own (hil/hildb, group/groupdb, contracts/contractdb, peer/peerdb,
// auth/tokendb, agent/auditdb, agent/idemdb, outbox) through
// store.Records, and added the export batches' compression
// (tier1/bodycodec, compress/gzip and zlib). With Records' methods
// generic over each record type that was +188 KiB on amd64 (13,148,322
// -> 13,340,834 B); Records' bodies are untyped since (one copy for all
// record types, store/records.go), which took 72 KiB of it back
// (13,267,106 B). What is left put most targets one 64 KiB step of their
// size past their ceilings, by 160 to 200 bytes (arm64 by 64 KiB): each
// ceiling that was passed, and amd64's (35 KiB of margin left), is now
// the size rounded up to 64 KiB plus 64 KiB. The same stop's wire seams
// (tier1/southbound's bridge, a2a.Ledger, internal/eventstream: 8 KiB on
// amd64) took armv7 one step up, 162 bytes over its ceiling (12,648,610
// -> 12,714,146 B, armv6's size): its ceiling is armv6's since.
// Issue 31's tier-1 seam (tier1.Service, built by the command and passed
// in agent.Options.Tier1; the tier1 and uplink sections the command's,
// written and checked in the order they had: 13 KB of symbols) took
// big-endian mips one step up, 408 bytes of read-only data over (its
// text 3.4 KB): 14,418,113 -> 14,549,185 B, 193 over its ceiling, which
// is 64 KiB higher since; mipsle fits its own (14,483,649 B).
// Stop 41 merged the outbox's queue into package outbox behind
// outbox.Peers (+12 KiB on amd64), the tier-1 seam above (+12 KiB) and
// the outbox items' and contracts' fast paths of the delegation (+8 KiB):
// amd64 13,344,930 -> 13,377,698 B, 8 KiB over, and mipsle 14,549,185 B,
// 193 over: both ceilings are 64 KiB higher.
// Stop 43's tier-1 blocks by steps, the ordered batch-id groups of two
// kinds, internal/clock and the one-frame path's pools (+8 KiB of text on
// amd64, 13,406,370 B, which fits) took arm64 one step up: 12,255,394 ->
// 12,320,930 B, 162 bytes over its ceiling, which is 64 KiB higher since.
var maxBinary = map[string]int64{
	"amd64":   12<<20 + 832<<10,
	"arm64":   11<<20 + 832<<10,
	"arm":     12<<20 + 256<<10,
	"armv6":   12<<20 + 256<<10,
	"mipsle":  13<<20 + 960<<10,
	"mips":    13<<20 + 960<<10,
	"riscv64": 11<<20 + 320<<10,
}

// maxBinaryGRPC is the same for the -grpc variant (the Makefile's
// GRPC_TAGS added): 14.91, 13.75 and 14.19 MiB then, plus about 128 KiB,
// and the issue 33 targets likewise. The reload of the config file
// (issue 32, package cli/reload: about 44 KiB on amd64) moved the MIPS
// -grpc binaries a 64 KiB step up, from 16,974,017 to 17,105,089 B:
// their ceiling is 64 KiB higher since. Self-update (see maxBinary) took
// amd64 -grpc to 16,220,322 B (32,930 over) and the MIPS -grpc pair to
// 17,563,841 B (193 over): their ceilings are 64 KiB higher.
// Stop 38 (see maxBinary) took these likewise: each one passed is the
// size rounded up to 64 KiB plus 64 KiB. Stop 40's seams of issue 31
// (httpapi's routes as handler types with one prologue adapter, peer's
// Pairing, Inbound and OutboxAdmin, the registrar in package registry,
// tier-1's records in tier1, wire's tier-1 answer, sse's one event
// writer, transport/netwire) grew the armv7 -grpc binary's text by 19 KB
// and its read-only data by 33 KB, each past a 64 KiB boundary
// (15,925,410 -> 16,056,482 B, armv6's the same): the two ARM -grpc
// ceilings are that size rounded up to 64 KiB plus 64 KiB. The default
// binaries fit theirs. Stop 41's merges (see maxBinary) took amd64 -grpc
// to 16,847,010 B (4 KiB over), the MIPS -grpc pair to 18,284,737 B and
// riscv64 -grpc to 15,007,906 B (193 and 162 over): theirs are 64 KiB
// higher. Stop 42's delegation fast paths (issue 27: the envelope's and
// the outbox item's writers and readers without reflection, the kv
// view's bucket paths) took arm64 -grpc to 15,597,730 B, 162 over a
// ceiling it had 396 bytes under: it is 64 KiB higher; the others fit.
var maxBinaryGRPC = map[string]int64{
	"amd64":   16<<20 + 128<<10,
	"arm64":   14<<20 + 960<<10,
	"arm":     15<<20 + 448<<10,
	"armv6":   15<<20 + 448<<10,
	"mipsle":  17<<20 + 512<<10,
	"mips":    17<<20 + 512<<10,
	"riscv64": 14<<20 + 384<<10,
}

// makeVar returns the words of the Makefile variable name (NAME ?= or
// NAME := ...).
func makeVar(t *testing.T, root, name string) []string {
	t.Helper()
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mk), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == name && (f[1] == "?=" || f[1] == ":=") {
			return f[2:]
		}
	}
	t.Fatalf("no %s in the Makefile", name)
	return nil
}

// ceilingKey is the key of a target in maxBinary: its GOARCH, with
// vGOARM for arm other than GOARM=7.
func ceilingKey(goarch, variant string) string {
	if goarch == "arm" && variant != "" && variant != "7" {
		return "armv" + variant
	}
	return goarch
}

// releaseBuild builds the release binary for goos/goarch[/variant] (GOARM,
// or GOMIPS for mips and mipsle) the way
// make cross does (static, -trimpath, -s -w, the Makefile's TAGS, and its
// GRPC_TAGS too when grpc) into dir.
func releaseBuild(t *testing.T, root, dir, goos, goarch, goarm string, grpc bool) string {
	t.Helper()
	tags := makeVar(t, root, "TAGS")
	out := filepath.Join(dir, "synapse-"+goos+"-"+goarch+goarm)
	if grpc {
		tags = append(tags, makeVar(t, root, "GRPC_TAGS")...)
		out += "-grpc"
	}
	cmd := exec.Command("go", "build", "-trimpath", "-tags", strings.Join(tags, ","), "-ldflags", "-s -w", "-o", out, ".")
	cmd.Dir = root
	env := []string{"GOOS=" + goos, "GOARCH=" + goarch, "CGO_ENABLED=0"}
	if goarch == "mips" || goarch == "mipsle" {
		env = append(env, "GOMIPS="+goarm, "GOARM=")
	} else {
		env = append(env, "GOARM="+goarm, "GOMIPS=")
	}
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s/%s%s: %v\n%s", goos, goarch, goarm, err, b)
	}
	return out
}

// TestBinarySize builds the release binaries (default and -grpc) of every
// target of build/targets.txt and checks each against its ceiling.
func TestBinarySize(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-builds the agent; skipped with -short")
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "build", "targets.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		p := strings.Split(line, "/")
		goos, goarch, goarm := p[0], p[1], ""
		if len(p) == 3 {
			goarm = p[2]
		}
		for _, grpc := range []bool{false, true} {
			ceilings, name := maxBinary, line
			if grpc {
				ceilings, name = maxBinaryGRPC, line+" -grpc"
			}
			budget, ok := ceilings[ceilingKey(goarch, goarm)]
			if !ok {
				t.Errorf("target %s has no size ceiling", name)
				continue
			}
			n++
			bin := releaseBuild(t, root, dir, goos, goarch, goarm, grpc)
			fi, err := os.Stat(bin)
			if err != nil {
				t.Fatal(err)
			}
			size := fi.Size()
			t.Logf("%-19s %9d bytes (%.2f MiB); ceiling %.2f MiB, goal %.2f MiB", name, size,
				float64(size)/(1<<20), float64(budget)/(1<<20), float64(goalBinary)/(1<<20))
			if size > budget {
				t.Errorf("%s: the release binary is %d bytes, over its %d-byte ceiling (make size shows where the bytes go)", name, size, budget)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no targets in build/targets.txt")
	}
}

// maxAnonAfterWork is the most anonymous memory (smaps_rollup
// Anonymous: heap, stacks, the runtime's tables) an agent may hold once
// it is quiet after workOps echo round trips: 5 MiB (issue 29; 2026-12-02,
// amd64: 3.7 to 4.0 MB, and 7.5 to 11.4 MB before the agent gave memory
// back).
const (
	maxAnonAfterWork = 5 << 20
	workOps          = 1000
)

// TestMemoryAfterWork starts the native release binary, has it run
// workOps echo tasks one after another over one connection (the workload
// of scripts/idle-rss.sh), and then waits for the agent to give back what
// the work grew: its anonymous memory must come down to maxAnonAfterWork
// (the trimmer of internal/memlimit acts after some quiet seconds). The
// measure is of counts (operations done, kB held), the wait a deadline.
func TestMemoryAfterWork(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release binary and runs 1000 tasks; skipped with -short")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/PID/smaps_rollup: Linux only")
	}
	if why := crossRun(); why != "" {
		t.Skip(why)
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := releaseBuild(t, root, t.TempDir(), runtime.GOOS, runtime.GOARCH, "", false)
	a := startAgent(t, agentOpts{bin: bin, args: []string{"--log-level", "warn"}})
	anon := func() int64 {
		t.Helper()
		m, err := smapsRollup(a.pid())
		if err != nil {
			t.Fatal(err)
		}
		return m["Anonymous"]
	}
	before := anon()
	hc := newClient(1, requestTimeout)
	defer hc.CloseIdleConnections()
	done := 0
	for i := range workOps {
		r, err := a.send(context.Background(), hc, http.MethodPost, prefix+"/task?wait=10",
			fmt.Appendf(nil, `{"task_type":"echo","payload":{"n":%d}}`, i))
		if err != nil {
			t.Fatalf("task %d: %v", i, err)
		}
		if r.status == http.StatusOK {
			done++
		}
	}
	if done != workOps {
		t.Fatalf("%d of %d echo round trips answered 200", done, workOps)
	}
	after := anon()
	deadline := time.Now().Add(60 * time.Second)
	held := after
	for held > maxAnonAfterWork && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		held = anon()
	}
	t.Logf("anonymous memory: %d kB before, %d kB after %d tasks, %d kB once quiet (ceiling %d kB)",
		before>>10, after>>10, workOps, held>>10, maxAnonAfterWork>>10)
	if held > maxAnonAfterWork {
		t.Errorf("the agent holds %d kB of anonymous memory 60 s after %d tasks, over %d kB: the work's heap was not given back",
			held>>10, workOps, maxAnonAfterWork>>10)
	}
}

// smapsRollup reads the byte counts of /proc/PID/smaps_rollup.
func smapsRollup(pid int) (map[string]int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return nil, err
	}
	m := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[2] == "kB" {
			if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				m[strings.TrimSuffix(f[0], ":")] = n << 10
			}
		}
	}
	if _, ok := m["Rss"]; !ok {
		return nil, fmt.Errorf("smaps_rollup of %d has no Rss line", pid)
	}
	return m, nil
}
