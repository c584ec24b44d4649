//go:build unix

package cli

import (
	"os/exec"
	"syscall"
)

// detach makes cmd's process the leader of a session of its own, so that
// neither this process's end nor a signal to its process group ends it.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
