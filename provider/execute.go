package provider

import (
	"context"
	"fmt"
	"time"
)

// ExecuteOptions are the arguments of Execute.
type ExecuteOptions struct {
	// Timeout bounds the wait for every key; default Options.WaitLockingTimeout (5 s).
	Timeout time.Duration
	// Expire is the lease renewed while the job runs, as LeaseOptions.Expire: zero means
	// DefaultLeaseExpire (60 s); NoExpiry is refused (ErrInvalidArgument).
	Expire time.Duration
}

// Execute runs job while holding every key under a fresh "execute:<uuid>" owner, as stock
// execute does: it waits up to opts.Timeout (else a *ConflictError matching ErrTimedOut, with
// every key it took given back; ctx ending first gives one matching ErrNotAcquired and ctx's
// cause, see ConflictError), renews the lease while job runs, and always releases under its
// own owner, also when job panics. If the lease is lost, job's context is cancelled with the loss
// as its cause and, unless job returns an error of its own, Execute returns the loss (matching
// ErrLockLost). The job's own error is returned unchanged. A failure to release after the job is
// logged, not returned (stock returns it): the job did run, and the keys expire with their lease.
// Execute needs at least one key and a job (else ErrInvalidArgument). The job reads the lease's
// fencing tokens from its ctx with FencingToken and FencingTokens.
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
	jobCtx, cancelJob := context.WithCancelCause(context.WithValue(ctx, fenceCtxKey{}, lease))
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
