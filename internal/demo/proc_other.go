//go:build !linux

package demo

import "syscall"

// sysProcAttr has no parent-death signal outside Linux: Close stops the server.
func sysProcAttr() *syscall.SysProcAttr { return nil }
