//go:build linux

package cli

import (
	"os/exec"
	"runtime"
	"syscall"
)

// startCommand starts cmd so that the kernel kills it (SIGKILL) if locktui dies first, and returns
// a channel that receives cmd.Wait's result. Without this a SIGKILLed or OOM-killed locktui would
// leave the command running after its lease expires, while someone else takes the keys.
//
// PR_SET_PDEATHSIG fires when the thread that forked the child exits, not the process
// (go.dev/issue/27505), and the Go runtime terminates a thread whose goroutine ends while locked
// to it. So one goroutine locks its thread, starts the command and waits for it on that thread:
// the thread runs nothing else and cannot exit until the command has exited; then it unlocks.
//
// Only the command itself is covered: processes it starts (not exec'd) are not killed with it.
// The kernel also clears the setting when the command execs a set-user-ID or set-group-ID
// program or one with file capabilities.
func startCommand(cmd *exec.Cmd) (<-chan error, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	started := make(chan error, 1)
	waited := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		waited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return waited, nil
}
