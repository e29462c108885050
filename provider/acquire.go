package provider

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// AcquireOptions are the arguments of Acquire, with stock Medusa's meaning.
type AcquireOptions struct {
	// Owner holds the lock; "" means the anonymous owner "*", which is never re-entrant.
	Owner string
	// Expire is the lock's TTL, rounded up to whole seconds (1.5 s gives 2 s; stock rejects
	// fractions with a Redis error); below one second, negative included, it is 1 s, as stock
	// clamps it. Zero makes a lock that never expires, as stock does when expire is omitted; a
	// same-owner re-acquire rewrites the TTL, and without Expire clears it.
	Expire time.Duration
	// AwaitQueue waits (with jittered exponential backoff) until every key is free instead of
	// failing at once. Stock Medusa waits forever; here the wait ends with ctx. A release of the
	// key by this same Provider ends the backoff sleep at once (see Options.Waker).
	AwaitQueue bool
}

// Acquire takes every key for opts.Owner. Without AwaitQueue it fails at once with a
// *ConflictError (ErrNotAcquired) naming the first held key in argument order; with AwaitQueue it
// waits until ctx is done (the error then also matches ctx's cause, e.g. context.Canceled). On
// failure the keys this call took are given back; keys the owner already held stay held. Keys are
// de-duplicated and taken in sorted order. A Redis error is returned wrapped with the key.
func (p *Provider) Acquire(ctx context.Context, keys []string, opts AcquireOptions) error {
	if len(keys) == 0 {
		return nil
	}
	owner := ownerOrDefault(opts.Owner)
	ttl := ttlSeconds(opts.Expire)
	if opts.AwaitQueue {
		return p.acquireQueued(ctx, keys, owner, ttl, false)
	}
	return p.acquireOnce(ctx, keys, owner, ttl)
}

// acquireOnce tries every key once, in one pipeline, and rolls back on any failure.
func (p *Provider) acquireOnce(ctx context.Context, keys []string, owner string, ttl int64) error {
	sorted := normalizeKeys(keys)
	res, errs, err := p.scriptBatch(ctx, acquireScript, sorted, owner, ttl)
	if err != nil {
		// Keys whose outcome is unknown are left alone: the owner may have held them before.
		p.giveBack(ctx, freshIn(sorted, res, errs), owner)
		return fmt.Errorf("acquire %s: %w", quoteKeys(sorted), err)
	}
	failed := map[string]error{}
	for i, key := range sorted {
		switch {
		case errs[i] != nil:
			failed[key] = fmt.Errorf("acquire %q: %w", key, errs[i])
		case res[i] == acquireHeld:
			failed[key] = notAcquired(key)
		}
	}
	if len(failed) == 0 {
		for _, key := range sorted {
			p.emit(EventAcquired, key, owner, 0, 0)
		}
		return nil
	}
	p.giveBack(ctx, freshIn(sorted, res, errs), owner)
	for _, key := range sorted {
		if failed[key] != nil {
			p.emit(EventGaveUp, key, owner, 0, 0)
		}
	}
	// Report the first failing key in the caller's order, as stock does.
	for _, key := range keys {
		if ferr, ok := failed[key]; ok {
			return ferr
		}
	}
	return nil // unreachable: every failed key is one of keys
}

// acquireQueued takes the keys in sorted order, waiting on each held key with backoff, and holds
// only a sorted prefix while it waits, which rules out lock-order deadlocks between callers of
// this provider. When ctx ends first, everything it took is
// given back and the error is a *ConflictError (ErrNotAcquired) that also matches ctx's cause.
//
// Every attempt is preceded by a wake-up registration on the keys it tries (see wakeups), so a
// wait on a key this Provider deletes ends at once, whether the Waker sleeps or listens.
//
// exclusive says that owner is unique to this call (an Execute or lease owner), so it held none
// of the keys before: then a key whose attempt had an unknown outcome (a reply lost to a read
// timeout or a broken connection) is given back as well, owner-checked.
func (p *Provider) acquireQueued(ctx context.Context, keys []string, owner string, ttl int64, exclusive bool) error {
	sorted := normalizeKeys(keys)
	started := time.Now()
	delay := p.opts.DefaultRetryInterval
	var taken []string // keys to give back on failure
	var wake *wakeup   // the registration of the current attempt
	defer func() { wake.stop() }()
	fail := func(err error) error {
		p.giveBack(ctx, taken, owner)
		return err
	}
	// settle records a batch's outcome for the give-back and returns the first key with an
	// error and that error.
	settle := func(batch []string, res []int64, errs []error) (string, error) {
		taken = append(taken, freshIn(batch, res, errs)...)
		var firstKey string
		var firstErr error
		for j, key := range batch {
			if errs[j] == nil {
				continue
			}
			if exclusive && !isReplyError(errs[j]) && p.mayHaveRun(errs[j]) {
				taken = append(taken, key)
			}
			if firstErr == nil {
				firstKey, firstErr = key, errs[j]
			}
		}
		return firstKey, firstErr
	}
	// ended is the error for a wait cut short by ctx while trying key.
	ended := func(key string) error {
		p.emit(EventGaveUp, key, owner, time.Since(started), 0)
		ce := notAcquired(key)
		ce.cause = context.Cause(ctx)
		return fail(ce)
	}
	for i := 0; i < len(sorted); {
		// Fast path: try every remaining key in one round trip.
		rest := sorted[i:]
		wake = p.wakeups.register(ctx, rest)
		res, errs, err := p.scriptBatch(ctx, acquireScript, rest, owner, ttl)
		if key, kerr := settle(rest, res, errs); kerr != nil {
			if err != nil && ctx.Err() != nil {
				return ended(key) // the attempt was cut short by the end of the wait
			}
			if err == nil {
				err = kerr
			}
			return fail(fmt.Errorf("acquire %q: %w", key, err))
		}
		blocked := -1
		var beyond []string // fresh keys after the first blocked one: given back at once
		for j, key := range rest {
			switch {
			case res[j] == acquireHeld && blocked < 0:
				blocked = j
			case res[j] == acquireFresh && blocked >= 0:
				beyond = append(beyond, key)
			}
		}
		if blocked < 0 {
			break
		}
		i += blocked
		key := sorted[i]
		// Before the give-back below, which would otherwise wake this very wait.
		wake.narrow(key)
		taken = slices.DeleteFunc(taken, func(k string) bool { return slices.Contains(beyond, k) })
		p.giveBack(ctx, beyond, owner)
		p.emit(EventWaiting, key, owner, 0, 0)
		for {
			p.opts.Waker.Wait(wake.ctx, p.RedisKey(key), jitter(delay))
			wake.stop()
			// The delay grows after a wake-up too, as after any failed attempt. A wake-up only
			// says the key was free for an instant: when another caller wins the race, the key
			// is held again and this waiter's next sleep stays bounded by the backoff, as in
			// stock. Not resetting costs local waiters nothing (the next release here wakes
			// them again at once) and keeps waiters on a key that another process won from
			// turning each local release into a burst of fast polling.
			delay = min(time.Duration(float64(delay)*p.opts.BackoffFactor), p.opts.MaximumRetryInterval)
			if ctx.Err() != nil {
				return ended(key)
			}
			wake = p.wakeups.register(ctx, sorted[i:i+1])
			r, errs, err := p.scriptBatch(ctx, acquireScript, []string{key}, owner, ttl)
			if _, kerr := settle([]string{key}, r, errs); kerr != nil {
				if err != nil && ctx.Err() != nil {
					return ended(key)
				}
				if err == nil {
					err = kerr
				}
				p.emit(EventGaveUp, key, owner, time.Since(started), 0)
				return fail(fmt.Errorf("acquire %q: %w", key, err))
			}
			if r[0] != acquireHeld {
				break
			}
		}
		wake.stop()
		i++
	}
	for _, key := range sorted {
		p.emit(EventAcquired, key, owner, time.Since(started), 0)
	}
	return nil
}

// freshIn lists the keys of one batch that the script took fresh.
func freshIn(keys []string, res []int64, errs []error) []string {
	var out []string
	for i, key := range keys {
		if errs[i] == nil && res[i] == acquireFresh {
			out = append(out, key)
		}
	}
	return out
}

// giveBack releases keys this call took, owner-checked, even after ctx ended. It emits no event:
// observers were never told that the call held these keys (EventAcquired is only sent once a call
// holds every key), and EventGaveUp already ends its story.
func (p *Provider) giveBack(ctx context.Context, keys []string, owner string) {
	if len(keys) == 0 {
		return
	}
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	_, errs, err := p.deleteBatch(ctx, releaseScript, keys, owner)
	if err == nil {
		err = errors.Join(errs...)
	}
	if err != nil {
		p.opts.Logger.Warn("Failed to give back locks after a failed acquisition; they expire with their TTL",
			"keys", keys, "owner", owner, "error", err)
	}
}

// jitter returns 50–100 % of d, as stock Medusa's backoff does.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.5 + rand.Float64()*0.5))
}
