package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
)

// Defaults of run's flags.
const (
	defaultRunTimeout = provider.DefaultWaitLockingTimeout // --timeout
	defaultRunExpire  = provider.DefaultLeaseExpire        // --expire
	defaultRunGrace   = 10 * time.Second                   // --grace: at most this, see maxGrace
)

// maxGrace is the largest --grace that run accepts for an --expire, and the default grace is
// min(defaultRunGrace, maxGrace(expire)). Just before each renewal the lease's deadline is about
// 0.9 − 1/3 ≈ 0.57 of the TTL ahead (renewals every TTL/3, deadline 0.9 TTL after the send time
// of the last confirmed one), and run sends SIGTERM when the deadline is --grace away: a grace
// of a quarter of the TTL leaves a renewal almost a whole renewal interval (0.32 TTL, with its
// retries) to be late before the command is stopped.
func maxGrace(expire time.Duration) time.Duration { return expire / 4 }

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
	case o.leaseExpire == 0:
		return s.fail(usagef("run", "--expire must be positive: a lease always expires"))
	case o.set["grace"] && o.grace > maxGrace(o.leaseExpire):
		return s.fail(usagef("run", "--grace %s is more than a quarter of --expire %s: at most %s, or every slow renewal would stop the command",
			o.grace, o.leaseExpire, maxGrace(o.leaseExpire)))
	case !o.set["grace"]:
		o.grace = min(defaultRunGrace, maxGrace(o.leaseExpire))
	}
	cmd := exec.Command(p.tail[0], p.tail[1:]...)
	if cmd.Err != nil {
		return s.cannotStart(p.tail[0], cmd.Err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.app.Stdin, s.stdout, s.stderr
	cmd.WaitDelay = pipeDrain
	// From here on run's own lines never wait for stderr (the command writes to it directly).
	defer s.speakWithoutBlocking()()

	waits := &waitWatch{}
	var c *conn
	var err error
	left := o.timeout // what is left of --timeout once Redis answered
	if o.timeout > 0 {
		c, left, err = s.connectWaiting(ctx, o, "--timeout", o.timeout, waits)
	} else {
		c, err = s.connect(ctx, o, waits)
	}
	if err != nil {
		return s.fail(err)
	}
	defer c.Close()
	s.warnEviction(ctx, c)
	sigs, unsubscribe := s.subscribe()
	defer unsubscribe()

	lease, code := s.takeLease(ctx, c, keys, o, left, sigs, waits)
	if lease == nil {
		return code
	}
	c.reportsLoss(lease)
	cmd.Env = leaseEnv(lease)
	waited, err := startCommand(cmd)
	if err != nil {
		s.releaseLease(ctx, lease)
		return s.cannotStart(p.tail[0], err)
	}
	return s.supervise(ctx, cmd, waited, c.ops, lease, sigs, o.grace)
}

// speakWithoutBlocking sends the session's stderr lines through a lineQueue until the function
// it returns is called: that flushes them (within stderrFlush) and puts stderr back.
func (s *session) speakWithoutBlocking() (restore func()) {
	direct := s.stderr
	q := newLineQueue(direct)
	s.stderr = q
	return func() {
		s.stderr = direct
		q.Close(stderrFlush)
	}
}

// onceTimeout bounds run --timeout 0's single attempt: the round trip, not a wait.
const onceTimeout = provider.DefaultWaitLockingTimeout

// errHeld ends run --timeout 0's acquisition at its first wait: a key is held.
var errHeld = errors.New("a key is held")

// waitWatch follows run's acquisition through the provider's events: it notes the key the
// acquisition last waited for and, when once is set (--timeout 0), ends the acquisition the
// moment it would start waiting, after its one attempt.
type waitWatch struct {
	mu     sync.Mutex
	key    string
	cancel context.CancelCauseFunc
}

// LockEvent notes a wait.
func (w *waitWatch) LockEvent(e provider.Event) {
	if e.Kind != provider.EventWaiting {
		return
	}
	w.mu.Lock()
	w.key = e.Key
	cancel := w.cancel
	w.mu.Unlock()
	if cancel != nil {
		cancel(errHeld)
	}
}

// once makes the acquisition under ctx end at its first wait.
func (w *waitWatch) once(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	w.mu.Lock()
	w.cancel = cancel
	w.mu.Unlock()
	return ctx, func() { cancel(nil) }
}

// waitedFor is the key the acquisition last waited for; "" if it never waited.
func (w *waitWatch) waitedFor() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.key
}

// takeLease waits up to timeout (what is left of --timeout) for the keys. On failure it returns
// a nil lease and the exit code: a wait that ended while Redis could not be reached is an error
// (exit 1), not a conflict, since nobody may hold the keys.
func (s *session) takeLease(ctx context.Context, c *conn, keys []string, o *options, timeout time.Duration, sigs <-chan os.Signal, waits *waitWatch) (*provider.Lease, int) {
	actx, stopWatch := cancelOnSignal(ctx, sigs)
	stopOnce := func() {}
	if o.timeout == 0 {
		actx, stopOnce = waits.once(actx)
		timeout = onceTimeout
	}
	lease, err := c.p.AcquireLease(actx, keys, provider.LeaseOptions{Timeout: timeout, Expire: o.leaseExpire})
	stopOnce()
	stopWatch() // from here on, signals are the command's
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
	case errors.Is(err, errHeld):
		key := waits.waitedFor()
		msg := fmt.Sprintf("Failed to acquire lock for key %q", key)
		if h := holderOf(ctx, c.ops, key); h != "" {
			msg += " (held by " + h + ")"
		}
		s.errorf("%s; --timeout 0 tries once", msg)
		return nil, o.conflictExit
	case errors.Is(err, provider.ErrTimedOut):
		detail := fmt.Sprintf("waited %s for %s", o.timeout, quoteKeys(keys))
		if down := (*provider.UnreachableError)(nil); errors.As(err, &down) {
			s.errorf("%s (%s; %s)", err, detail, down)
			return nil, ExitError
		}
		if key := waits.waitedFor(); key != "" {
			if h := holderOf(ctx, c.ops, key); h != "" {
				detail += fmt.Sprintf("; %q is held by %s", key, h)
			}
		}
		s.errorf("%s (%s)", err, detail)
		return nil, o.conflictExit
	default:
		return nil, s.fail(err)
	}
}

// holderOf describes who holds key now: the quoted owner, "a key of another type", or "" when
// it is free or cannot be read (it only explains a failure that is reported anyway).
func holderOf(ctx context.Context, ops *operator.Inspector, key string) string {
	if key == "" {
		return ""
	}
	l, ok, err := ops.Get(ctx, key)
	switch {
	case err != nil || !ok:
		return ""
	case l.Foreign:
		return "a key of another type"
	default:
		return strconv.Quote(l.Owner)
	}
}

// supervise waits for the started command (its cmd.Wait result arrives on waited) while
// forwarding signals and watching the lease, then releases the lease and returns run's exit code.
//
// The command must be dead before Redis can expire the keys, which it cannot do before the
// lease's deadline (Lease.Deadline). So when the deadline comes within grace without a renewal
// having moved it, the command gets SIGTERM, and SIGKILL at the deadline if it still runs. After
// a SIGTERM from run (also for a lost lease or an ended ctx), SIGKILL follows grace later or at
// the deadline, whichever comes first. A renewal confirmed after the SIGTERM does not take it
// back. One timer serves both moments: it is re-armed from the deadline when it fires early.
//
// A lost lease is explained (see lossReason) by a read of Redis that runs beside the loop, so
// that it never holds up a SIGKILL; its line is printed when the read is done, and before run
// returns.
func (s *session) supervise(ctx context.Context, cmd *exec.Cmd, waited <-chan error, ops *operator.Inspector, lease *provider.Lease, sigs <-chan os.Signal, grace time.Duration) int {
	var (
		termAt    time.Time // when run sent SIGTERM; zero before
		forLease  bool      // that SIGTERM was because of the lease: exit ExitLockLost
		killed    bool
		terminate = func() {
			if termAt.IsZero() {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				termAt = time.Now()
			}
		}
		reason  <-chan string // the explanation of the loss, while it is read
		lostMsg func(reason string) string
	)
	timer := time.NewTimer(time.Until(lease.Deadline().Add(-grace)))
	defer timer.Stop()
	// step acts on every moment that has come and arms the timer for the next one.
	step := func() {
		for !killed {
			now, deadline := time.Now(), lease.Deadline()
			switch {
			case termAt.IsZero() && now.Before(deadline.Add(-grace)):
				timer.Reset(deadline.Add(-grace).Sub(now))
				return
			case termAt.IsZero():
				forLease = true
				terminate()
				s.errorf("renewal of the lock on %s is overdue (the lease ends in %s); stopping the command with SIGTERM, SIGKILL at the deadline",
					quoteKeys(lease.Keys()), max(deadline.Sub(now), 0).Round(time.Millisecond))
			case now.Before(earliest(termAt.Add(grace), deadline)):
				timer.Reset(earliest(termAt.Add(grace), deadline).Sub(now))
				return
			case now.Before(deadline):
				_ = cmd.Process.Kill()
				killed = true
				s.errorf("the command did not exit within %s of SIGTERM; sent SIGKILL", grace)
			default:
				_ = cmd.Process.Kill()
				killed = true
				s.errorf("the command still ran at the lease's deadline; sent SIGKILL before Redis can expire the keys")
			}
		}
	}
	leaseDone, ctxDone := lease.Done(), ctx.Done()
	for {
		select {
		case err := <-waited:
			if errors.Is(err, exec.ErrWaitDelay) {
				s.warnf("the command exited but its output stayed open (a background process?); stopped reading after %s", pipeDrain)
			}
			if reason == nil && leaseDone != nil && (lease.Err() != nil || !time.Now().Before(lease.Deadline())) {
				// Lost as the command died (the SIGKILL at the deadline comes when the lease's
				// own expiry does, which may not have ended it yet): still say why.
				lostMsg = func(reason string) string {
					return fmt.Sprintf("lost the lock on %s while the command ran: %s", quoteKeys(lostKeys(lease)), reason)
				}
				reason = explainLoss(ctx, ops, lease)
			}
			if reason != nil {
				s.errorf("%s", lostMsg(<-reason))
			}
			s.releaseLease(ctx, lease)
			if forLease || lease.Err() != nil {
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
			if lease.Err() == nil {
				continue
			}
			forLease = true
			lost := fmt.Sprintf("lost the lock on %s while the command ran", quoteKeys(lostKeys(lease)))
			lostMsg = func(reason string) string { return lost + ": " + reason }
			if termAt.IsZero() { // else it already got SIGTERM
				now := time.Now()
				killIn := max(earliest(now.Add(grace), lease.Deadline()).Sub(now), 0).Round(time.Millisecond)
				terminate()
				lostMsg = func(reason string) string {
					return fmt.Sprintf("%s: %s; stopping it with SIGTERM (SIGKILL after %s)", lost, reason, killIn)
				}
			}
			reason = explainLoss(ctx, ops, lease)
			step()
		case r := <-reason:
			reason = nil
			s.errorf("%s", lostMsg(r))
		case <-ctxDone:
			ctxDone = nil
			terminate()
			step()
		case <-timer.C:
			step()
		}
	}
}

// earliest returns the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
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
