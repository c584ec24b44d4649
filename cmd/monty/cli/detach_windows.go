package cli

import (
	"os/exec"
	"syscall"
)

// detachedProcess is Windows' DETACHED_PROCESS creation flag: no console.
const detachedProcess = 0x00000008

// detach starts cmd's process in a process group of its own, without a
// console, so that this process's end and its console's Ctrl-C leave it.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP | detachedProcess}
}
