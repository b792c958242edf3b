package main

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel kill cmd's process when the harness
// dies, so that no agent or broker outlives a harness killed by its
// time limit.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
