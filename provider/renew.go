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
// Renewals never overlap: the timer is armed again only when one has ended. When checkSoon
// armed it, it checks the keys instead (extend.lua's check: nothing is extended) and arms the
// timer again for the renewal that was due.
func (l *Lease) renew() {
	l.mu.Lock()
	if l.stopped || l.ctx.Err() != nil {
		l.mu.Unlock()
		return
	}
	done := make(chan struct{})
	l.renewing = done
	// A renewal that is due is made even when a check was asked: it checks the keys too, and a
	// stream of messages about them must not starve it.
	check := l.check && time.Now().Before(l.due)
	l.check = false
	l.mu.Unlock()
	next := l.renewOnce(check)
	l.mu.Lock()
	l.renewing = nil
	close(done)
	switch {
	case next > 0 && !check:
		l.due = time.Now().Add(next)
	case next > 0:
		next = max(time.Until(l.due), time.Nanosecond)
	}
	if l.again && next > 0 {
		next, l.check = time.Nanosecond, true // checkSoon asked while this one was in flight
	}
	l.again = false
	if next > 0 && !l.stopped && l.ctx.Err() == nil {
		l.renewal.Reset(next)
	}
	l.mu.Unlock()
}

// renewOnce runs one renewal, or with check one check of the keys, and returns when the next
// renewal is due (for a check: anything above 0; renew keeps the due time), or 0 when the lease
// ended (lost, released or abandoned meanwhile: the result then no longer matters).
func (l *Lease) renewOnce(check bool) time.Duration {
	sent := time.Now()
	ctx, cancel := context.WithDeadline(l.ctx, l.Deadline())
	args := []any{l.owner, l.ttl, l.claim}
	if check {
		args = append(args, checkOnly)
	}
	res, errs, err := l.p.scriptBatch(ctx, extendScript, l.keys, mayResend, args...)
	cancel()
	if l.ctx.Err() != nil {
		return 0
	}
	if err == nil {
		// A key that now holds another type (WRONGTYPE) is lost, not unreachable.
		err = errors.Join(slices.DeleteFunc(slices.Clone(errs), isWrongType)...)
	}
	if err != nil && check {
		return time.Nanosecond // the renewals deal with an unreachable Redis
	}
	if err != nil {
		next := l.retry.Next()
		l.failed(err)
		l.p.opts.Logger.Warn(fmt.Sprintf("Failed to renew lock for key(s) %s: %v. Retrying in %dms.",
			quoteKeys(l.keys), err, next.Milliseconds()), "deadline_in", time.Until(l.Deadline()).Round(time.Millisecond))
		return next
	}
	gone := map[string]bool{}
	var cause error // nil: a key gone or taken, stock's message
	l.mu.Lock()
	if l.heard != "" {
		cause = keyGoneError{event: l.heard} // what the listener heard made this check
	}
	l.heard = ""
	l.mu.Unlock()
	for i, key := range l.keys {
		if errs[i] != nil || res[i] != 1 {
			gone[key] = true
		}
		if errs[i] == nil && res[i] == 2 {
			cause = ErrRevoked // extend.lua: an operator revoked the hold
		}
	}
	// Name the lost keys in the caller's order, as stock's message does.
	if lost := slices.DeleteFunc(slices.Clone(l.order), func(k string) bool { return !gone[k] }); len(lost) > 0 {
		if check && cause == nil {
			// Keys gone with nothing heard: the check of the listener's first subscription, which
			// may follow a restart; a probe of the run_id ends every lease with the right cause
			// if so (and this lease's loss below is then no news).
			l.p.epochs.probe(l.ctx)
		}
		l.lose(lost, cause)
		return 0
	}
	if check {
		l.checks.Add(1)
		return time.Nanosecond
	}
	if !l.confirm(sent) {
		return 0
	}
	for _, key := range l.keys {
		l.p.emit(EventRenewed, key, l.owner, 0, time.Since(l.acquired))
	}
	l.retry.Reset()
	return l.interval
}

// checkOnly is extend.lua's ARGV[4] for a check that extends nothing.
const checkOnly = "check"

// checkSoon checks the lease's keys now (or as soon as the renewal in flight ends), without
// renewing them: the listener heard event (hear.go) about one of them, which may be gone, or
// ("") subscribed for the first time.
func (l *Lease) checkSoon(event string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkSoonLocked(event)
}

// checkSoonLocked is checkSoon with l.mu held.
func (l *Lease) checkSoonLocked(event string) {
	if l.stopped || l.ctx.Err() != nil {
		return
	}
	if event != "" {
		l.heard = event
	}
	if l.renewing != nil || !l.renewal.Stop() {
		// A renewal runs, or the timer fired and its callback waits for l.mu: it checks
		// after that one ends (renew), never beside it.
		l.again = true
		return
	}
	l.check = true
	l.renewal.Reset(time.Nanosecond)
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
	if l.p.holding.remove(l) {
		l.p.listen.unuse(true)
	}
}
