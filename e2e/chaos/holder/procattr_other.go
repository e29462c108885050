//go:build !linux

package main

import "syscall"

// dieWithParent is nil outside Linux, which has no parent-death signal.
func dieWithParent() *syscall.SysProcAttr { return nil }
