package agenttest_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/client/agenttest"
)

const orphanChildEnv = "AGENTTEST_ORPHAN_CHILD"

// TestDieWithParent kills -9 a process that started a child through
// Command (as a go test killed by its -timeout dies, running no Cleanup)
// and checks that the child is gone too.
func TestDieWithParent(t *testing.T) {
	if os.Getenv(orphanChildEnv) == "1" {
		child := agenttest.Command("sleep", "60")
		if err := child.Start(); err != nil {
			fmt.Println("start:", err)
			os.Exit(1)
		}
		fmt.Println("pid", child.Process.Pid)
		time.Sleep(60 * time.Second)
		os.Exit(0)
	}
	if os.Getenv(agenttest.EmulatorEnv) != "" {
		t.Skip("under an emulator the parent-death signal is the emulator's to deliver")
	}
	parent := exec.Command(os.Args[0], "-test.run=^TestDieWithParent$", "-test.timeout=90s")
	parent.Env = append(os.Environ(), orphanChildEnv+"=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = parent.Process.Kill(); _ = parent.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read the child's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "pid "))
	if err != nil {
		t.Fatalf("parent said %q", line)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the child %d is not running before the kill: %v", pid, err)
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The child is no child of this process: once killed, init reaps it.
		if err := syscall.Kill(pid, 0); err != nil {
			return
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("child %d still runs 10 s after its parent's kill -9", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
