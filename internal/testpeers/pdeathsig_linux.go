package testpeers

import "syscall"

// setPdeathsig kills the peer if the test binary dies without cleaning up.
func setPdeathsig(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
