package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// AcquireOptions are the arguments of Acquire, with stock Medusa's meaning.
type AcquireOptions struct {
	// Owner holds the lock; "" means the anonymous owner "*", which is never re-entrant.
	Owner string
	// Expire is the lock's TTL, rounded up to whole seconds (1.5 s gives 2 s; stock rejects
	// fractions with a Redis error); below one second, negative included, it is 1 s, as stock
	// clamps it. Zero makes a lock that never expires, as stock does when expire is omitted; a
	// same-owner re-acquire rewrites the TTL, and without Expire clears it (a call that fails
	// puts the previous TTL back; see Acquire).
	Expire time.Duration
	// AwaitQueue waits (with jittered exponential backoff) until every key is free instead of
	// failing at once. Stock Medusa waits forever; here the wait ends with ctx. A release of the
	// key by this same Provider ends the backoff sleep at once (see Options.Waker). With an
	// Expire, the keys held while waiting for later ones are extended every Expire/3, and after
	// any wait every key is confirmed to be the owner's (and extended to the full Expire) before
	// Acquire returns: a key lost meanwhile is waited for again.
	AwaitQueue bool
}

// Acquire takes every key for opts.Owner. Without AwaitQueue it fails at once with a
// *ConflictError (ErrNotAcquired) naming the first held key in argument order; with AwaitQueue it
// waits until ctx is done (the error then also matches ctx's cause, e.g. context.Canceled). Keys
// are de-duplicated and taken in sorted order. A Redis error is returned wrapped with the key.
//
// On failure the keys this call took are given back, and keys the owner already held stay held
// with the lifetime they had left: a re-entry rewrites a key's TTL before the call knows whether
// it gets every key, so a failed call puts the previous TTL back (owner-checked, less the time
// since it was read; 1 ms if it ran out meanwhile; no expiry if there was none). Two limits
// remain. A same-owner call on the same key at the same time may see its TTL overwritten by that
// restore. And a key this call took but cannot tell from one the owner held before stays held
// by the owner until its TTL ends (never without Expire): a key whose outcome is unknown after a
// Redis error, or one whose reply was lost and whose pipeline go-redis resent (the second run
// reports a re-entry). Execute and leases without an Owner have neither limit.
func (p *Provider) Acquire(ctx context.Context, keys []string, opts AcquireOptions) error {
	if len(keys) == 0 {
		return nil
	}
	owner := ownerOrDefault(opts.Owner)
	ttl := ttlSeconds(opts.Expire)
	if opts.AwaitQueue {
		_, err := p.acquireQueued(ctx, keys, owner, ttl, false)
		return err
	}
	return p.acquireOnce(ctx, keys, owner, ttl)
}

// acquireOnce tries every key once, in one pipeline, and rolls back on any failure.
func (p *Provider) acquireOnce(ctx context.Context, keys []string, owner string, ttl int64) error {
	sorted := normalizeKeys(keys)
	res, errs, err := p.acquireBatch(ctx, sorted, owner, ttl)
	h := newHoldings(owner, false)
	h.record(sorted, res, errs, time.Now())
	if err != nil {
		// Keys whose outcome is unknown are left alone: the owner may have held them before.
		p.putBack(ctx, h)
		return fmt.Errorf("acquire %s: %w", quoteKeys(sorted), err)
	}
	failed := map[string]error{}
	for i, key := range sorted {
		switch {
		case errs[i] != nil:
			failed[key] = fmt.Errorf("acquire %q: %w", key, errs[i])
		case res[i].status == acquireHeld:
			failed[key] = notAcquired(key)
		}
	}
	if len(failed) == 0 {
		for _, key := range sorted {
			p.emit(EventAcquired, key, owner, 0, 0)
		}
		return nil
	}
	p.putBack(ctx, h)
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

// holdings is what an acquisition must put back if it fails: the keys it took, to delete, and
// the keys its owner already held, whose lifetime it rewrote, to restore. Both owner-checked.
type holdings struct {
	owner string
	// exclusive says that owner is unique to this call (an Execute or lease owner generated
	// here), so it held none of the keys before.
	exclusive bool
	taken     map[string]bool    // deleted on failure
	reentered map[string]reentry // their lifetime restored on failure
}

// reentry is a key that the owner held before the call re-entered it.
type reentry struct {
	pttl int64     // its PTTL in milliseconds before the call; -1: no expiry
	at   time.Time // when that was read
}

func newHoldings(owner string, exclusive bool) *holdings {
	return &holdings{owner: owner, exclusive: exclusive, taken: map[string]bool{}, reentered: map[string]reentry{}}
}

// record notes one acquire batch's replies, read at time at.
//
// With an exclusive owner, a key the call took is given back whether the script replied "fresh"
// or "re-entered" (go-redis resends a pipeline whose reply it lost, and the resent script then
// finds the key taken by the first run), and so is a key whose outcome is unknown (a transport
// error: the script may have run, whatever error the call saw last). An owner-checked delete
// under an owner of its own can only remove what this call took. With a caller's owner, a
// re-entry is a key the owner held before, and a key of unknown outcome is left alone.
func (h *holdings) record(keys []string, res []acquireReply, errs []error, at time.Time) {
	for i, key := range keys {
		switch {
		case errs[i] != nil:
			if h.exclusive && !isReplyError(errs[i]) {
				h.taken[key] = true
			}
		case res[i].status == acquireFresh, h.exclusive && res[i].status == acquireReentered:
			h.taken[key] = true
			delete(h.reentered, key)
		case res[i].status == acquireReentered:
			if _, seen := h.reentered[key]; !seen && !h.taken[key] {
				h.reentered[key] = reentry{pttl: res[i].prevPTTL, at: at}
			}
		}
	}
}

// detach moves keys out of h, into holdings of their own that the caller puts back at once.
func (h *holdings) detach(keys []string) *holdings {
	out := newHoldings(h.owner, h.exclusive)
	for _, key := range keys {
		if h.taken[key] {
			out.taken[key] = true
			delete(h.taken, key)
		}
		if r, ok := h.reentered[key]; ok {
			out.reentered[key] = r
			delete(h.reentered, key)
		}
	}
	return out
}

// forget drops key, no longer the call's, from everything the call would put back.
func (h *holdings) forget(key string) {
	delete(h.taken, key)
	delete(h.reentered, key)
}

// putBack undoes a failed acquisition, even after ctx ended: it deletes the keys the call took
// and gives the keys the owner already held the lifetime they had left, both owner-checked.
func (p *Provider) putBack(ctx context.Context, h *holdings) {
	p.giveBack(ctx, slices.Sorted(maps.Keys(h.taken)), h.owner)
	p.restoreTTLs(ctx, h.owner, h.reentered)
}

// restoreTTLs gives keys the owner held before a failed call re-entered them the lifetime they
// had left, owner-checked, even after ctx ended. A key whose lifetime ran out meanwhile gets
// 1 ms. Like giveBack, it emits no event.
func (p *Provider) restoreTTLs(ctx context.Context, owner string, reentered map[string]reentry) {
	if len(reentered) == 0 {
		return
	}
	keys := slices.Sorted(maps.Keys(reentered))
	left := make([]int64, len(keys))
	for i, key := range keys {
		r := reentered[key]
		left[i] = -1
		if r.pttl >= 0 {
			left[i] = max(r.pttl-time.Since(r.at).Milliseconds(), 1)
		}
	}
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	_, errs, err := evalBatch(ctx, p, restoreScript, keys, func(i int) []any { return []any{owner, left[i]} }, (*redis.Cmd).Int64)
	if err == nil {
		err = errors.Join(errs...)
	}
	if err != nil {
		p.opts.Logger.Warn("Failed to restore the TTL of locks the owner already held after a failed acquisition",
			"keys", keys, "owner", owner, "error", err)
	}
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
	_, errs, err := p.deleteBatch(ctx, releaseScript, keys, owner, 0, false)
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
