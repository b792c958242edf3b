//go:build !linux

package agenttest

import "os/exec"

// DieWithParent does nothing where the kernel has no parent-death
// signal: a child of a test killed by its -timeout outlives it there.
func DieWithParent(cmd *exec.Cmd) {}
