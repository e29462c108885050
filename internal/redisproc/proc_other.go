//go:build !linux

package redisproc

import "syscall"

// sysProcAttr has no parent-death signal outside Linux: only Stop ends the server.
func sysProcAttr(bool) *syscall.SysProcAttr { return nil }
