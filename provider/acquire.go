package provider

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// AcquireOptions are the arguments of Acquire, with stock Medusa's meaning.
type AcquireOptions struct {
	// Owner holds the lock; "" means the anonymous owner "*", which is never re-entrant.
	Owner string
	// Expire is the lock's TTL, rounded up to whole seconds (at least 1 s). Zero makes a lock
	// that never expires, as stock does when expire is omitted; a same-owner re-acquire rewrites
	// the TTL, and without Expire clears it.
	Expire time.Duration
	// AwaitQueue waits (with jittered exponential backoff) until every key is free instead of
	// failing at once. Stock Medusa waits forever; here the wait ends with ctx.
	AwaitQueue bool
}

// Acquire takes every key for opts.Owner. Without AwaitQueue it fails at once with a
// *ConflictError (ErrNotAcquired) naming the first held key in argument order; with AwaitQueue it
// waits until ctx is done. On failure the keys this call took are given back; keys the owner
// already held stay held. Keys are de-duplicated and taken in sorted order.
func (p *Provider) Acquire(ctx context.Context, keys []string, opts AcquireOptions) error {
	if len(keys) == 0 {
		return nil
	}
	owner := ownerOrDefault(opts.Owner)
	ttl := ttlSeconds(opts.Expire)
	if opts.AwaitQueue {
		_, err := p.acquireQueued(ctx, keys, owner, ttl)
		return err
	}
	return p.acquireOnce(ctx, keys, owner, ttl)
}

// acquireOnce tries every key once, in one pipeline, and rolls back on any failure.
func (p *Provider) acquireOnce(ctx context.Context, keys []string, owner string, ttl int64) error {
	sorted := normalizeKeys(keys)
	res, errs, err := p.scriptBatch(ctx, acquireScript, sorted, owner, ttl)
	if err != nil {
		return fmt.Errorf("acquire %s: %w", quoteKeys(sorted), err)
	}
	var fresh []string
	failed := map[string]error{}
	for i, key := range sorted {
		switch {
		case errs[i] != nil:
			failed[key] = errs[i]
		case res[i] == acquireHeld:
			failed[key] = notAcquired(key)
		case res[i] == acquireFresh:
			fresh = append(fresh, key)
		}
	}
	if len(failed) == 0 {
		for _, key := range sorted {
			p.emit(EventAcquired, key, owner, 0, 0)
		}
		return nil
	}
	p.giveBack(ctx, fresh, owner)
	for key := range failed {
		p.emit(EventGaveUp, key, owner, 0, 0)
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
// this provider. It returns the keys it took fresh. When ctx ends first, everything it took is
// given back and the error is a *ConflictError (ErrNotAcquired) that also matches ctx's cause.
func (p *Provider) acquireQueued(ctx context.Context, keys []string, owner string, ttl int64) ([]string, error) {
	sorted := normalizeKeys(keys)
	started := time.Now()
	delay := p.opts.DefaultRetryInterval
	var fresh []string
	fail := func(err error) ([]string, error) {
		p.giveBack(ctx, fresh, owner)
		return nil, err
	}
	for i := 0; i < len(sorted); {
		// Fast path: try every remaining key in one round trip.
		rest := sorted[i:]
		res, errs, err := p.scriptBatch(ctx, acquireScript, rest, owner, ttl)
		if err != nil {
			return fail(fmt.Errorf("acquire %s: %w", quoteKeys(rest), err))
		}
		blocked := -1
		var beyond []string // fresh keys after the first blocked one: given back at once
		for j, key := range rest {
			if errs[j] != nil {
				fresh = append(fresh, freshIn(rest, res, errs)...)
				return fail(errs[j])
			}
			switch {
			case res[j] == acquireHeld && blocked < 0:
				blocked = j
			case res[j] == acquireFresh && blocked < 0:
				fresh = append(fresh, key)
			case res[j] == acquireFresh:
				beyond = append(beyond, key)
			}
		}
		if blocked < 0 {
			for _, key := range sorted {
				p.emit(EventAcquired, key, owner, time.Since(started), 0)
			}
			return fresh, nil
		}
		p.giveBack(ctx, beyond, owner)
		i += blocked
		key := sorted[i]
		p.emit(EventWaiting, key, owner, 0, 0)
		for {
			p.opts.Waker.Wait(ctx, p.RedisKey(key), jitter(delay))
			delay = min(time.Duration(float64(delay)*p.opts.BackoffFactor), p.opts.MaximumRetryInterval)
			if ctx.Err() != nil {
				p.emit(EventGaveUp, key, owner, time.Since(started), 0)
				ce := notAcquired(key)
				ce.cause = context.Cause(ctx)
				return fail(ce)
			}
			r, errs, err := p.scriptBatch(ctx, acquireScript, []string{key}, owner, ttl)
			if err == nil && errs[0] != nil {
				err = errs[0]
			}
			if err != nil {
				if ctx.Err() != nil {
					continue // report the end of the wait, not the interrupted call
				}
				return fail(fmt.Errorf("acquire %q: %w", key, err))
			}
			if r[0] == acquireFresh {
				fresh = append(fresh, key)
			}
			if r[0] != acquireHeld {
				break
			}
		}
		i++
	}
	for _, key := range sorted {
		p.emit(EventAcquired, key, owner, time.Since(started), 0)
	}
	return fresh, nil
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

// giveBack releases keys this call took, owner-checked, even after ctx ended.
func (p *Provider) giveBack(ctx context.Context, keys []string, owner string) {
	if len(keys) == 0 {
		return
	}
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	if _, errs, err := p.scriptBatch(ctx, releaseScript, keys, owner); err != nil {
		p.opts.Logger.Warn("Failed to give back locks after a failed acquisition; they expire with their TTL",
			"keys", keys, "owner", owner, "error", err)
	} else {
		for i, key := range keys {
			if errs[i] == nil {
				p.emit(EventReleased, key, owner, 0, 0)
			}
		}
	}
}

// jitter returns 50–100 % of d, as stock Medusa's backoff does.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.5 + rand.Float64()*0.5))
}
