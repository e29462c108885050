package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// LeaseOptions are the arguments of AcquireLease.
type LeaseOptions struct {
	// Owner of the lease; "" gives a fresh "execute:<uuid v4>", as stock execute does.
	Owner string
	// Timeout bounds the wait for every key; default Options.WaitLockingTimeout (5 s).
	Timeout time.Duration
	// Expire is the lease, renewed every max(Expire/3, 250 ms) while held; default 60 s,
	// rounded up to whole seconds.
	Expire time.Duration
}

// Lease is a set of keys held under one owner and renewed in the background until Release, or
// until a renewal finds that a key expired or changed owner (the lease is then lost: Done is
// closed and Err returns a *ConflictError matching ErrLockLost).
type Lease struct {
	p        *Provider
	keys     []string // sorted, without namespace
	order    []string // the caller's order, de-duplicated: for messages
	owner    string
	ttl      int64
	interval time.Duration
	acquired time.Time

	ctx    context.Context // cancelled with the loss as cause, or by Release
	cancel context.CancelCauseFunc
	stop   chan struct{}
	done   chan struct{} // closed when the renewal goroutine has exited

	stopOnce sync.Once
	mu       sync.Mutex // guards the fields below
	ended    bool       // the release script ran
	released bool       // its result: every key was still ours
}

// AcquireLease waits up to opts.Timeout for every key and returns a renewed lease. When the
// timeout passes first it returns a *ConflictError matching ErrTimedOut ("Timed-out acquiring
// lock.") after giving back every key it took; when ctx ends first it returns ctx's cause wrapped
// with the keys (errors.Is(err, context.Canceled) holds). The lease does not end with ctx: call
// Release.
//
// Keys are taken in sorted order; while it waits for one, the call holds the keys before it and
// extends them every Expire/3. After any wait, every key is confirmed to be the lease's and
// extended to the full Expire before the lease is returned; a key lost meanwhile is waited for
// again within the timeout. Without a wait, taking the keys is one round trip.
//
// Without opts.Owner the owner is this call's own, so on failure every key the call may have
// taken is given back, owner-checked: also a key whose reply was lost (go-redis resends the
// pipeline, and its second run reports a re-entry) or whose outcome is unknown after a Redis
// error. With opts.Owner, such keys are left alone, as in Acquire. That give-back runs even
// after ctx ended, bounded to 5 s: with Redis unreachable, it may delay the return by the
// client's dial retries.
func (p *Provider) AcquireLease(ctx context.Context, keys []string, opts LeaseOptions) (*Lease, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: a lease needs at least one key", ErrInvalidArgument)
	}
	owner := opts.Owner
	if owner == "" {
		owner = NewExecuteOwner()
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = p.opts.WaitLockingTimeout
	}
	expire := opts.Expire
	if expire <= 0 {
		expire = DefaultLeaseExpire
	}
	ttl := ttlSeconds(expire)
	sorted := normalizeKeys(keys)
	timeoutErr := timedOut(sorted)
	waitCtx, cancel := context.WithTimeoutCause(ctx, timeout, timeoutErr)
	defer cancel()
	if err := p.acquireQueued(waitCtx, sorted, owner, ttl, opts.Owner == ""); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("acquire lock for key(s) %s: %w", quoteKeys(sorted), context.Cause(ctx))
		}
		if errors.Is(err, timeoutErr) {
			return nil, timedOut(sorted)
		}
		return nil, err
	}
	l := &Lease{
		p:        p,
		keys:     sorted,
		order:    uniqueInOrder(keys),
		owner:    owner,
		ttl:      ttl,
		interval: max(time.Duration(ttl)*time.Second/3, MinRenewInterval),
		acquired: time.Now(),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	l.ctx, l.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	go l.renew()
	return l, nil
}

// Keys returns the leased keys, sorted, de-duplicated, without namespace.
func (l *Lease) Keys() []string { return slices.Clone(l.keys) }

// Owner returns the lease's owner id.
func (l *Lease) Owner() string { return l.owner }

// Done is closed when the lease is lost or released.
func (l *Lease) Done() <-chan struct{} { return l.ctx.Done() }

// Err returns the loss (a *ConflictError matching ErrLockLost) once the lease is lost, else nil.
func (l *Lease) Err() error {
	var ce *ConflictError
	if errors.As(context.Cause(l.ctx), &ce) {
		return ce
	}
	return nil
}

// isWrongType reports a WRONGTYPE reply: the key holds something that is not a lock.
func isWrongType(err error) bool { return err != nil && redis.HasErrorPrefix(err, "WRONGTYPE") }

// errReleased is the cause of a lease context ended by Release.
var errReleased = errors.New("provider: lease released")

// renew extends every key each interval. A Redis error is logged and retried; a key that is gone
// or owned by someone else ends the lease as lost.
func (l *Lease) renew() {
	defer close(l.done)
	timer := time.NewTimer(l.interval)
	defer timer.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-timer.C:
		}
		ctx, cancel := context.WithTimeout(l.ctx, l.interval)
		res, errs, err := l.p.scriptBatch(ctx, extendScript, l.keys, l.owner, l.ttl)
		cancel()
		select {
		case <-l.stop:
			return // released meanwhile: the result no longer matters
		default:
		}
		if err == nil {
			// A key that now holds another type (WRONGTYPE) is lost, not unreachable.
			err = errors.Join(slices.DeleteFunc(slices.Clone(errs), isWrongType)...)
		}
		if err != nil {
			l.p.opts.Logger.Warn(fmt.Sprintf("Failed to renew lock for key(s) %s: %v. Retrying in %dms.",
				quoteKeys(l.keys), err, l.interval.Milliseconds()))
			timer.Reset(l.interval)
			continue
		}
		gone := map[string]bool{}
		for i, key := range l.keys {
			if errs[i] != nil || res[i] != 1 {
				gone[key] = true
			}
		}
		// Name the lost keys in the caller's order, as stock's message does.
		lost := slices.DeleteFunc(slices.Clone(l.order), func(k string) bool { return !gone[k] })
		if len(lost) > 0 {
			lostErr := lockLost(lost)
			l.p.opts.Logger.Warn(lostErr.Error(), "owner", l.owner)
			for _, key := range lost {
				l.p.emit(EventLost, key, l.owner, 0, time.Since(l.acquired))
			}
			l.cancel(lostErr)
			return
		}
		for _, key := range l.keys {
			l.p.emit(EventRenewed, key, l.owner, 0, time.Since(l.acquired))
		}
		timer.Reset(l.interval)
	}
}

// Release stops the renewal and deletes every key still held by the lease's owner. It reports
// whether every key was released (false after a loss). Once the keys were released, calling it
// again returns the same result; after a Redis error it may be called again to retry. A
// cancelled ctx still releases (the clean-up is bounded separately).
func (l *Lease) Release(ctx context.Context) (bool, error) {
	l.stopOnce.Do(func() {
		close(l.stop)
		// Cancel before waiting: an in-flight renewal (bounded only by the renewal interval,
		// up to Expire/3) is cut short instead of holding up the release. A loss recorded
		// earlier stays the cause; the renewal sees stop closed and records nothing more.
		l.cancel(errReleased)
		<-l.done
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return l.released, nil
	}
	held := time.Since(l.acquired)
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	res, errs, err := l.p.deleteBatch(ctx, releaseScript, l.keys, l.owner, held, true)
	if err == nil {
		// A key that now holds another type is no longer ours: not released, not an error.
		err = errors.Join(slices.DeleteFunc(slices.Clone(errs), isWrongType)...)
	}
	if err != nil {
		return false, fmt.Errorf("release lease %s: %w", quoteKeys(l.keys), err)
	}
	l.ended, l.released = true, true
	for i := range l.keys {
		if errs[i] != nil || res[i] != 1 {
			l.released = false
		}
	}
	return l.released, nil
}

// ExecuteOptions are the arguments of Execute.
type ExecuteOptions struct {
	// Timeout bounds the wait for every key; default Options.WaitLockingTimeout (5 s).
	Timeout time.Duration
	// Expire is the lease renewed while the job runs; default 60 s.
	Expire time.Duration
}

// Execute runs job while holding every key under a fresh "execute:<uuid>" owner, as stock
// execute does: it waits up to opts.Timeout (else a *ConflictError matching ErrTimedOut, with
// every key it took given back), renews the lease while job runs, and always releases under its
// own owner, also when job panics. If the lease is lost, job's context is cancelled with the loss
// as its cause and, unless job returns an error of its own, Execute returns the loss (matching
// ErrLockLost). The job's own error is returned unchanged. A failure to release after the job is
// logged, not returned (stock returns it): the job did run, and the keys expire with their lease.
// Execute needs at least one key and a job (else ErrInvalidArgument).
func (p *Provider) Execute(ctx context.Context, keys []string, job func(ctx context.Context) error, opts ExecuteOptions) error {
	if job == nil {
		return fmt.Errorf("%w: execute needs a job", ErrInvalidArgument)
	}
	lease, err := p.AcquireLease(ctx, keys, LeaseOptions{Timeout: opts.Timeout, Expire: opts.Expire})
	if err != nil {
		return err
	}
	defer func() {
		if _, err := lease.Release(ctx); err != nil {
			p.opts.Logger.Warn("Failed to release lock after execute; it expires with its lease",
				"keys", lease.keys, "owner", lease.owner, "error", err)
		}
	}()
	jobCtx, cancelJob := context.WithCancelCause(ctx)
	defer cancelJob(nil)
	stopWatch := context.AfterFunc(lease.ctx, func() {
		if lost := lease.Err(); lost != nil {
			cancelJob(lost)
		}
	})
	defer stopWatch()
	if err := job(jobCtx); err != nil {
		return err
	}
	return lease.Err()
}
