//go:build unix && !linux

package e2e

import "syscall"

// childAttr puts a child in its own process group. Outside Linux there is no parent-death
// signal: a test binary killed from outside leaves its children running.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
