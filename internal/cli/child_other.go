//go:build !linux

package cli

import "os/exec"

// startCommand starts cmd and returns a channel that receives cmd.Wait's result.
//
// Outside Linux there is no parent-death signal that locktui can set portably, so a command
// whose locktui is killed with SIGKILL keeps running without the lock (the run help and the
// package documentation say so).
func startCommand(cmd *exec.Cmd) (<-chan error, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	return waited, nil
}
