//go:build linux

package e2e_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// setFileSizeLimit sets the soft RLIMIT_FSIZE of process pid: writes that
// would grow a file past n bytes fail (EFBIG), as on a full disk.
func setFileSizeLimit(t *testing.T, pid int, n uint64) {
	t.Helper()
	var cur syscall.Rlimit
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE, 0, uintptr(unsafe.Pointer(&cur)), 0, 0); e != 0 {
		t.Skipf("prlimit: %v", e)
	}
	lim := syscall.Rlimit{Cur: min(n, cur.Max), Max: cur.Max}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE, uintptr(unsafe.Pointer(&lim)), 0, 0, 0); e != 0 {
		t.Skipf("prlimit: %v", e)
	}
}

// TestHostileFullDiskMessage (issue #15, item 10): when the data file
// cannot grow, a submission gets a retriable 500 TP-SYS002 that names the
// file without the directory it is in; once it can grow again, the agent
// accepts tasks without a restart.
func TestHostileFullDiskMessage(t *testing.T) {
	a := startAgent(t, agentOpts{})
	db := filepath.Join(a.dataDir, "synapse.db")
	fi, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	setFileSizeLimit(t, a.pid(), uint64(fi.Size()))
	big := `{"task_type":"echo","payload":{"x":"` + strings.Repeat("a", 64<<10) + `"}}`
	r := a.call(http.MethodPost, prefix+"/task", []byte(big))
	if r.status != http.StatusInternalServerError || tpCode(string(r.body)) != "TP-SYS002" {
		t.Fatalf("submit on a full disk: %s, want 500 TP-SYS002", r)
	}
	if dir := filepath.Dir(db); strings.Contains(string(r.body), dir) {
		t.Errorf("the answer names the data directory %s: %s", dir, r.body)
	}
	setFileSizeLimit(t, a.pid(), ^uint64(0))
	deadline := time.Now().Add(10 * time.Second)
	for {
		r = a.call(http.MethodPost, prefix+"/task", []byte(big))
		if r.status == http.StatusCreated {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the disk has room again: %s, want 201", r)
		}
		time.Sleep(pollEvery)
	}
}
