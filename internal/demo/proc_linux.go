package demo

import "syscall"

// sysProcAttr kills the demo redis-server if the console dies without closing it. (Linux sends
// the signal when the thread that started the child exits; Go keeps its threads for the life of
// the process unless a goroutine locked to one exits, which the console does not do.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
