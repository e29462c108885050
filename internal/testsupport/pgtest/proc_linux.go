package pgtest

import "syscall"

// sysProcAttr runs initdb and postgres in a process group of their own (Stop kills the whole
// group when the server does not shut down), as cred's user when cred is not nil, and has Linux
// kill them when the test process dies without stopping them. (Go sets the parent-death signal
// after changing the user, so it survives the change. Linux sends it when the thread that
// started the child exits; Go keeps its threads unless a goroutine locked to one exits, which no
// caller does.)
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
}
