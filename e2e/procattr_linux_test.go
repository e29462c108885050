//go:build linux

package e2e

import "syscall"

// childAttr puts a child in its own process group (kill reaches what it starts) and has Linux
// SIGKILL it when the test binary dies without stopping it (a test killed from outside would
// otherwise leave chaos holders and bridges running). The signal fires when the thread that
// started the child exits; the Go runtime keeps its threads unless a goroutine locked to one
// exits, which no test does.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
