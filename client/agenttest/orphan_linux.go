package agenttest

import (
	"os/exec"
	"syscall"
)

// DieWithParent makes the kernel kill cmd's process (SIGKILL) when the
// test process that starts it dies, so a go test killed by its -timeout
// (which runs no Cleanup) leaves no agent or broker running. Call it
// before cmd.Start. The signal is tied to the OS thread that forks the
// child; the Go runtime keeps its threads, so in a test that is the
// process.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
