package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// A lease's renewals run on a timer (Lease.renewal, a time.AfterFunc), not in a goroutine of
// their own: a lease released before its first renewal (most are: one Execute) costs no
// goroutine, no wake-up of one at Release, and no wait for one to exit.

// renew is the renewal timer's callback: it extends every key, the attempt bounded by the
// deadline, and arms the timer for the next renewal. A Redis error is logged and retried sooner
// (renewRetryMin, doubling up to the interval); the lease is lost at its deadline if no renewal
// is confirmed by then (checkDeadline), or at once when a key is gone or owned by someone else.
// Renewals never overlap: the timer is armed again only when one has ended.
func (l *Lease) renew() {
	l.mu.Lock()
	if l.stopped || l.ctx.Err() != nil {
		l.mu.Unlock()
		return
	}
	done := make(chan struct{})
	l.renewing = done
	l.mu.Unlock()
	next := l.renewOnce()
	l.mu.Lock()
	l.renewing = nil
	close(done)
	if next > 0 && !l.stopped && l.ctx.Err() == nil {
		l.renewal.Reset(next)
	}
	l.mu.Unlock()
}

// renewOnce runs one renewal and returns when the next one is due, or 0 when the lease ended
// (lost, released or abandoned meanwhile: the result then no longer matters).
func (l *Lease) renewOnce() time.Duration {
	sent := time.Now()
	ctx, cancel := context.WithDeadline(l.ctx, l.Deadline())
	res, errs, err := l.p.scriptBatch(ctx, extendScript, l.keys, mayResend, l.owner, l.ttl, l.claim)
	cancel()
	if l.ctx.Err() != nil {
		return 0
	}
	if err == nil {
		// A key that now holds another type (WRONGTYPE) is lost, not unreachable.
		err = errors.Join(slices.DeleteFunc(slices.Clone(errs), isWrongType)...)
	}
	if err != nil {
		next := min(l.retry, l.interval)
		l.retry *= 2
		l.failed(err)
		l.p.opts.Logger.Warn(fmt.Sprintf("Failed to renew lock for key(s) %s: %v. Retrying in %dms.",
			quoteKeys(l.keys), err, next.Milliseconds()), "deadline_in", time.Until(l.Deadline()).Round(time.Millisecond))
		return next
	}
	gone := map[string]bool{}
	for i, key := range l.keys {
		if errs[i] != nil || res[i] != 1 {
			gone[key] = true
		}
	}
	// Name the lost keys in the caller's order, as stock's message does.
	if lost := slices.DeleteFunc(slices.Clone(l.order), func(k string) bool { return !gone[k] }); len(lost) > 0 {
		l.lose(lost, nil)
		return 0
	}
	if !l.confirm(sent) {
		return 0
	}
	for _, key := range l.keys {
		l.p.emit(EventRenewed, key, l.owner, 0, time.Since(l.acquired))
	}
	l.retry = renewRetryMin
	return l.interval
}

// stopRenewals ends the renewals for good (Release, Abandon, with the lease's context already
// cancelled, which cuts a renewal in flight short): none starts after it, and it returns once
// the one in flight, if any, has ended.
func (l *Lease) stopRenewals() {
	l.mu.Lock()
	l.stopped = true
	inflight := l.renewing
	l.mu.Unlock()
	if inflight != nil {
		<-inflight
	}
	l.unwatch()
}

// unwatch stops the lease's timers and takes it off the epoch watcher: the lease has ended
// (lost, released or abandoned). It may be called more than once.
func (l *Lease) unwatch() {
	l.mu.Lock()
	l.renewal.Stop()
	l.expiry.Stop()
	l.mu.Unlock()
	l.p.epochs.remove(l)
}
