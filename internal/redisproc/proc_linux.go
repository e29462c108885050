package redisproc

import "syscall"

// sysProcAttr, with killWithParent, has Linux kill the server when the process that started it
// dies without stopping it. (Linux sends the signal when the thread that started the child
// exits; Go keeps its threads for the life of the process unless a goroutine locked to one
// exits, which none of the callers does.)
func sysProcAttr(killWithParent bool) *syscall.SysProcAttr {
	if !killWithParent {
		return nil
	}
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
