//go:build unix && !linux

package pgtest

import "syscall"

// sysProcAttr runs initdb and postgres in a process group of their own, as cred's user when
// cred is not nil. There is no parent-death signal outside Linux: only Stop ends the server.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}
