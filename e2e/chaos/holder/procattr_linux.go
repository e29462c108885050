//go:build linux

package main

import "syscall"

// dieWithParent has Linux SIGKILL a `locktui run` when this holder dies first (the e2e test
// SIGKILLs holders, and a holder dies with a test binary killed from outside), so no run loop
// outlives the chaos run.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
