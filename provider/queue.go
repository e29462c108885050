package provider

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// queue is one acquisition that waits for held keys (Acquire with AwaitQueue, AcquireLease,
// Execute). It takes the keys in sorted order and, while it waits for one, holds only the keys
// before it (a sorted prefix), which rules out lock-order deadlocks between callers of this
// provider.
//
// With a TTL, the held prefix could expire during a long wait and be taken by someone else, so
// the queue extends it (owner-checked) a third of the TTL after it was last set or extended,
// and, before it reports success after a wait during which it held keys, confirms and refreshes
// every key in one round trip. A key found no longer its own sends the call back to waiting for
// that key (giving back the keys after it). An acquisition that never waited while holding a
// key costs no round trip more than its attempts.
//
// Every attempt is preceded by a wake-up registration on the keys it tries (see wakeups), so a
// wait on a key that is freed ends at once, whether the Waker sleeps or listens: a wait starts
// the Provider's wake-up listener (listen.go) and ends its use of it.
//
// With Options.FairQueue, a call that finds the key it waits for held (or someone ahead in its
// queue) joins the key's queue with its claim as ticket, and takes the key only at the queue's
// head (acquire.lua). It queues on that one key only, the first it does not hold: the keys it
// holds form a sorted prefix and it never holds a ticket on a key after the one it waits for,
// so no cycle of waits can form (a holder of a later key never waits behind a ticket of ours
// on an earlier one). Its ticket is refreshed by every attempt, at least every
// QueueTicketTTL/3, and is given up with the key (giveback.lua) when the call moves back to an
// earlier key or ends without the keys.
type queue struct {
	p       *Provider
	ctx     context.Context // ends the wait: the error then matches its cause
	keys    []string        // sorted, de-duplicated
	ttl     int64           // seconds; 0: the keys never expire (NoExpiry)
	h       *holdings       // what a failure puts back
	started time.Time
	delay   time.Duration // the backoff delay, shared by all keys of the call
	wake    *wakeup       // the registration of the current attempt
	ticket  string        // the call's fair-queue ticket (its claim); "" without FairQueue
	joined  string        // the key whose queue the last attempt joined, "" if none
	listens bool          // the call uses the Provider's wake-up listener
	leftFor time.Duration // the last attempt found the key free but left to others this long (share.go)
	overdue bool          // the last attempt found the key held by a stock holder past its turn
	fastKey string        // the key this call polls fast (fastPollers), "" if none
	queued  func()        // called once Redis answered the first attempt; then nil

	held      int       // keys[:held] are the call's
	refreshed time.Time // when keys[:held] were last set or extended (when that was sent), at the oldest
	waited    bool      // the call waited, holding keys, since they were last confirmed
}

// acquireQueued takes every key for the owner of h, waiting on each held key with backoff until
// ctx is done. When ctx ends first, it puts back everything it took and the error is a
// *ConflictError (ErrNotAcquired) that also matches ctx's cause. On success it returns when the
// oldest of the keys' current lifetimes was requested: the send time of the attempt or
// extension that set it, from which a lease's local deadline is counted. queued, when not nil,
// is called once Redis answered the first attempt (see LeaseOptions.Queued).
func (p *Provider) acquireQueued(ctx context.Context, keys []string, h *holdings, ttl int64, queued func()) (time.Time, error) {
	q := &queue{p: p, ctx: ctx, keys: normalizeKeys(keys), ttl: ttl, h: h,
		started: time.Now(), delay: p.opts.DefaultRetryInterval, queued: queued}
	if p.opts.FairQueue {
		q.ticket = h.claim
	}
	owner := h.owner
	defer func() {
		q.pollFast("")
		q.wake.stop()
		if q.listens {
			p.listen.unuse()
		}
	}()
	// Take the keys; after a wait, confirm them (which may send the call back to waiting).
	for q.held < len(q.keys) || (q.waited && q.ttl > 0) {
		var err error
		if q.held < len(q.keys) {
			err = q.next()
		} else {
			err = q.confirm()
		}
		if err != nil {
			return time.Time{}, err
		}
	}
	for _, key := range q.keys {
		p.emit(EventAcquired, key, owner, time.Since(q.started), 0)
	}
	return q.refreshed, nil
}

// next tries every key not held yet in one round trip. When one is held by someone else, it
// keeps the keys before it, puts back those after it (see holdings), and waits for it.
func (q *queue) next() error {
	rest := q.keys[q.held:]
	res, sent, err := q.attempt(rest)
	if err != nil {
		return err
	}
	blocked := slices.IndexFunc(res, isHeld)
	if blocked < 0 {
		q.took(len(rest), sent)
		return nil
	}
	q.took(blocked, sent)
	key := q.keys[q.held]
	// Before the give-back below, which would otherwise wake this very wait.
	q.wake.narrow(key)
	if err := q.p.putBack(q.ctx, q.h.detach(q.keys[q.held+1:])); err != nil {
		return q.fail(fmt.Errorf("acquire %s: %w", quoteKeys(q.keys[q.held+1:]), err))
	}
	// Keys held during a wait may expire meanwhile and must be confirmed after it; a wait that
	// holds nothing has nothing to confirm (the attempt that ends it sets the full TTL).
	q.waited = q.waited || q.held > 0
	if !q.listens {
		q.listens = true
		q.p.listen.use()
	}
	q.p.emit(EventWaiting, key, q.h.owner, 0, 0)
	return q.waitFor(key)
}

// waitFor waits for key, keys[held], retrying it with backoff and keeping the held keys alive.
// It returns once it took key, once it found a held key no longer the call's (held then points
// at that key), or with the error that ends the call.
func (q *queue) waitFor(key string) error {
	for {
		sleep := jitter(q.delay)
		if d := q.untilRefresh(); d < sleep {
			sleep = max(d, 0)
		}
		if q.ticket != "" {
			// Keep the ticket alive; and a key blocked behind the first one of a batch has no
			// ticket yet (only the first joins): take one at once.
			sleep = min(sleep, q.p.opts.QueueTicketTTL/3)
			if q.joined != key {
				sleep = 0
			}
		}
		if q.leftFor > 0 {
			// The key is free at the end of the others' turn: be there.
			sleep = min(sleep, q.leftFor+time.Millisecond)
		}
		if q.overdue && q.pollFast(key) {
			sleep = min(sleep, sharePoll)
		}
		if sleep > 0 {
			q.p.opts.Waker.Wait(q.wake.waitContext(), q.p.RedisKey(key), sleep)
		}
		q.wake.stop()
		// The delay grows after a wake-up too, as after any failed attempt. A wake-up only
		// says the key was free for an instant: when another caller wins the race, the key is
		// held again and this waiter's next sleep stays bounded by the backoff, as in stock.
		// Not resetting costs local waiters nothing (the next release here wakes them again at
		// once) and keeps waiters on a key that another process won from turning each local
		// release into a burst of fast polling.
		q.delay = min(time.Duration(float64(q.delay)*q.p.opts.BackoffFactor), q.p.opts.MaximumRetryInterval)
		if q.ctx.Err() != nil {
			return q.ended(key)
		}
		if q.untilRefresh() <= 0 {
			if lost, err := q.extend(q.held); err != nil || lost {
				return err
			}
		}
		res, sent, err := q.attempt([]string{key})
		if err != nil {
			return err
		}
		if !isHeld(res[0]) {
			q.took(1, sent)
			return nil
		}
	}
}

// pollFast makes the call the fast poller of key (see fastPollers) and reports whether it is;
// it gives up a claim on another key first. pollFast("") gives up any claim.
func (q *queue) pollFast(key string) bool {
	if q.fastKey != "" && q.fastKey != key {
		q.p.fast.drop(q.fastKey, q)
		q.fastKey = ""
	}
	if key == "" {
		return false
	}
	if q.p.fast.claim(key, q) {
		q.fastKey = key
		return true
	}
	return false
}

// attempt runs acquire.lua on batch, keys that follow the held prefix, after noting them in the
// holdings. It also registers the wake-up for a wait that follows. A Redis error ends the call.
func (q *queue) attempt(batch []string) ([]int64, time.Time, error) {
	q.wake.stop()
	q.wake = q.p.wakeups.register(q.ctx, batch, q.ticket, q.started)
	q.h.touch(batch...)
	sent := time.Now()
	res, errs, err := q.p.acquireBatch(q.ctx, batch, q.h, q.ttl, true)
	q.h.unsent(batch, err)
	q.joined = ""
	if q.ticket != "" && errs[0] == nil && isHeld(res[0]) {
		q.joined = batch[0]
	}
	q.leftFor, q.overdue = 0, false
	if i := slices.IndexFunc(res, isHeld); i >= 0 && errs[i] == nil {
		q.leftFor = time.Duration(-min(res[i], 0)) * time.Millisecond
		q.overdue = res[i] == acquireOverdue
	}
	if f := q.queued; f != nil && err == nil && (q.ticket == "" || q.joined != "" || !slices.ContainsFunc(res, isHeld)) {
		// With a ticket, only once the call is in the queue of the key it waits for (a key
		// blocked behind the first of a batch joins on the next attempt, at once) or holds its
		// keys: a call sent after it then queues behind it.
		q.queued = nil
		f()
	}
	for j, key := range batch {
		if errs[j] == nil {
			continue
		}
		if err != nil && q.ctx.Err() != nil {
			return nil, sent, q.ended(key) // the attempt was cut short by the end of the wait
		}
		if err == nil {
			err = errs[j]
		}
		q.p.emit(EventGaveUp, key, q.h.owner, time.Since(q.started), 0)
		return nil, sent, q.fail(fmt.Errorf("acquire %q: %w", key, err))
	}
	return res, sent, nil
}

// took adds the next n keys, set by an attempt sent at sent, to the held prefix.
func (q *queue) took(n int, sent time.Time) {
	if q.held == 0 {
		q.refreshed = sent
	}
	q.held += n
}

// untilRefresh is how long until the held prefix must be extended: a third of the TTL after it
// was last set or extended. Without a TTL or a held key, never.
func (q *queue) untilRefresh() time.Duration {
	if q.ttl == 0 || q.held == 0 {
		return math.MaxInt64
	}
	return time.Until(q.refreshed.Add(time.Duration(q.ttl) * time.Second / 3))
}

// confirm makes sure, after a wait, that every key is still the call's, refreshing each to the
// full TTL in one round trip. A key that is not (it expired while the call waited and someone
// else took it) sends the call back to waiting for it (see extend).
func (q *queue) confirm() error {
	q.waited = false
	_, err := q.extend(len(q.keys))
	return err
}

// extend checks that keys[:n] are still the call's and extends them to the full TTL, in one
// round trip (extend.lua, owner-checked). It reports whether one was lost (gone, another owner
// or another type): the call then holds only the keys before it and puts back those after it,
// so it holds a sorted prefix again. A Redis error ends the call.
func (q *queue) extend(n int) (lost bool, err error) {
	keys := q.keys[:n]
	sent := time.Now()
	res, errs, err := q.p.scriptBatch(q.ctx, extendScript, keys, mayResend, q.h.owner, q.ttl, q.h.claim)
	for i, key := range keys {
		if errs[i] == nil || isWrongType(errs[i]) {
			continue
		}
		if err != nil && q.ctx.Err() != nil {
			return false, q.ended(key)
		}
		if err == nil {
			err = errs[i]
		}
		q.p.emit(EventGaveUp, key, q.h.owner, time.Since(q.started), 0)
		return false, q.fail(fmt.Errorf("acquire %q: %w", key, err))
	}
	q.refreshed = sent
	for i := range keys {
		if errs[i] == nil && res[i] == 1 {
			continue
		}
		q.held = i
		if err := q.p.putBack(q.ctx, q.h.detach(q.keys[i+1:])); err != nil {
			return false, q.fail(fmt.Errorf("acquire %s: %w", quoteKeys(q.keys[i+1:]), err))
		}
		return true, nil
	}
	return false, nil
}

// fail puts back what the call took and returns err (see holdings.failed).
func (q *queue) fail(err error) error {
	return q.h.failed(q.p.putBack(q.ctx, q.h), err)
}

// ended is the error for a wait cut short by ctx while trying key.
func (q *queue) ended(key string) error {
	q.p.emit(EventGaveUp, key, q.h.owner, time.Since(q.started), 0)
	ce := notAcquired(key)
	ce.cause = context.Cause(q.ctx)
	return q.fail(ce)
}
