package cli

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/locktui/locktui/provider"
)

// Defaults of run's flags.
const (
	defaultRunTimeout = provider.DefaultWaitLockingTimeout // --timeout
	defaultRunExpire  = provider.DefaultLeaseExpire        // --expire
	defaultRunGrace   = 10 * time.Second                   // --grace
)

// pipeDrain bounds how long run waits for the command's output to drain after it exited (a
// background process it left behind may hold the pipes open).
const pipeDrain = 2 * time.Second

func runRun(ctx context.Context, s *session, o *options, p parsedArgs) int {
	if !p.dashdash || len(p.tail) == 0 {
		return s.fail(usagef("run", "run needs -- COMMAND [ARG...] after the keys"))
	}
	keys := p.positional
	if err := checkKeys("run", keys); err != nil {
		return s.fail(err)
	}
	switch {
	case o.timeout == 0:
		return s.fail(usagef("run", "--timeout must be positive"))
	case o.expire == 0:
		return s.fail(usagef("run", "--expire must be positive: a lease always expires"))
	}
	cmd := exec.Command(p.tail[0], p.tail[1:]...)
	if cmd.Err != nil {
		return s.cannotStart(p.tail[0], cmd.Err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.app.Stdin, s.stdout, s.stderr
	cmd.WaitDelay = pipeDrain

	c, err := s.connect(ctx, o)
	if err != nil {
		return s.fail(err)
	}
	defer c.Close()
	sigs, unsubscribe := s.subscribe()
	defer unsubscribe()

	lease, code := s.takeLease(ctx, c.p, keys, o, sigs)
	if lease == nil {
		return code
	}
	waited, err := startCommand(cmd)
	if err != nil {
		s.releaseLease(ctx, lease)
		return s.cannotStart(p.tail[0], err)
	}
	return s.supervise(ctx, cmd, waited, lease, sigs, o.grace)
}

// takeLease waits for the keys. On failure it returns a nil lease and the exit code.
func (s *session) takeLease(ctx context.Context, p *provider.Provider, keys []string, o *options, sigs <-chan os.Signal) (*provider.Lease, int) {
	actx, stopWatch := cancelOnSignal(ctx, sigs)
	lease, err := p.AcquireLease(actx, keys, provider.LeaseOptions{Timeout: o.timeout, Expire: o.expire})
	stopWatch()
	if se, ok := interrupted(actx); ok {
		if lease != nil {
			s.releaseLease(ctx, lease)
		}
		s.errorf("%s while waiting for %s", se, quoteKeys(keys))
		return nil, se.exitCode()
	}
	switch {
	case err == nil:
		return lease, ExitOK
	case errors.Is(err, provider.ErrTimedOut):
		s.errorf("%s (waited %s for %s)", err, o.timeout, quoteKeys(keys))
		return nil, ExitTimedOut
	default:
		return nil, s.fail(err)
	}
}

// supervise waits for the started command (its cmd.Wait result arrives on waited) while
// forwarding signals and watching the lease, then releases the lease and returns run's exit code.
func (s *session) supervise(ctx context.Context, cmd *exec.Cmd, waited <-chan error, lease *provider.Lease, sigs <-chan os.Signal, grace time.Duration) int {

	var killTimer *time.Timer
	var kill <-chan time.Time
	defer func() {
		if killTimer != nil {
			killTimer.Stop()
		}
	}()
	terminate := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if killTimer == nil {
			killTimer = time.NewTimer(grace)
			kill = killTimer.C
		}
	}
	leaseDone, ctxDone := lease.Done(), ctx.Done()
	for {
		select {
		case err := <-waited:
			if errors.Is(err, exec.ErrWaitDelay) {
				s.warnf("the command exited but its output stayed open (a background process?); stopped reading after %s", pipeDrain)
			}
			s.releaseLease(ctx, lease)
			if lease.Err() != nil {
				return ExitLockLost
			}
			return exitStatus(cmd.ProcessState)
		case sig, ok := <-sigs:
			if !ok {
				sigs = nil // an injected channel was closed: nothing more to forward
				continue
			}
			_ = cmd.Process.Signal(sig)
		case <-leaseDone:
			leaseDone = nil
			if lease.Err() != nil {
				s.errorf("lost the lock on %s while the command ran; stopping it with SIGTERM (SIGKILL after %s)",
					quoteKeys(lease.Keys()), grace)
				terminate()
			}
		case <-ctxDone:
			ctxDone = nil
			terminate()
		case <-kill:
			kill = nil
			s.errorf("the command did not exit within %s of SIGTERM; sending SIGKILL", grace)
			_ = cmd.Process.Kill()
		}
	}
}

// releaseLease gives the lease back, also after ctx ended, and warns when that fails.
func (s *session) releaseLease(ctx context.Context, lease *provider.Lease) {
	if _, err := lease.Release(context.WithoutCancel(ctx)); err != nil {
		s.warnf("could not release %s: %v; the lock expires with its lease", quoteKeys(lease.Keys()), err)
	}
}

// cannotStart reports a command that could not be started and returns the shell's exit code
// for it: 127 when it does not exist, 126 otherwise.
func (s *session) cannotStart(name string, err error) int {
	switch {
	case errors.Is(err, exec.ErrDot):
		s.errorf("command not found: %s (it is in the current directory: run it as ./%s)", name, name)
		return ExitNotFound
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		s.errorf("command not found: %s", name)
		return ExitNotFound
	case errors.Is(err, fs.ErrPermission):
		s.errorf("cannot execute %s: permission denied", name)
		return ExitCannotExecute
	default:
		s.errorf("cannot execute %s: %s", name, oneLine(err.Error()))
		return ExitCannotExecute
	}
}

// exitStatus is the exit code of a finished command: its own, or 128+N when signal N killed it.
func exitStatus(ps *os.ProcessState) int {
	if ps == nil {
		return ExitError
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ExitSignalBase + int(ws.Signal())
	}
	return ps.ExitCode()
}
