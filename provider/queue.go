package provider

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"time"

	"github.com/locktui/locktui/internal/backoff"
	"github.com/locktui/locktui/internal/sleep"
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
//
// A round trip that cannot reach Redis (IsUnreachable: a failed dial, a connection reset in the
// middle of the call, a server that is loading or failing over) does not end the call: it waits
// with its backoff and tries again until ctx ends, so a wait rides out a failover or a restart.
// An attempt whose outcome is unknown (it may have run) stays in the holdings and is tried
// again under the same claim, which re-enters what the first run took (see acquireBatch); keys
// after the one the call waits for are given back after the next round trip Redis answers.
// When ctx ends while the last round trip could not reach Redis, the conflict also carries an
// *UnreachableError (see ended).
type queue struct {
	p       *Provider
	ctx     context.Context // ends the wait: the error then matches its cause
	keys    []string        // sorted, de-duplicated
	ttl     int64           // seconds; 0: the keys never expire (NoExpiry)
	h       *holdings       // what a failure puts back
	started time.Time
	delay   backoff.Backoff // the backoff, shared by all keys of the call
	wake    *wakeup         // the registration of the current attempt
	ticket  string          // the call's fair-queue ticket (its claim); "" without FairQueue
	joined  string          // the key whose queue the last attempt joined, "" if none
	listens bool            // the call uses the Provider's wake-up listener
	leftFor time.Duration   // the last attempt found the key free but left to others this long (share.go)
	overdue bool            // the last attempt found the key held by a stock holder past its turn
	fastKey string          // the key this call polls fast (fastPollers), "" if none
	queued  func()          // called once Redis answered the first attempt; then nil
	down    error           // why the last round trip could not reach Redis; nil once Redis answered
	learn   bool            // a lease's: the server's run_id is read before the first attempt (epochs.learn)

	held      int       // keys[:held] are the call's
	refreshed time.Time // when keys[:held] were last set or extended (when that was sent), at the oldest
	waited    bool      // the call waited, holding keys, since they were last confirmed
}

// acquireQueued takes every key for the owner of h, waiting on each held key with backoff until
// ctx is done, and riding out a Redis that cannot be reached the same way. When ctx ends first,
// it puts back everything it took and the error is a *ConflictError (ErrNotAcquired, or a copy
// of ctx's cause when that is a wait's own timeout conflict, see ended) that also matches ctx's
// cause. On success it returns when the oldest of the keys' current lifetimes was requested:
// the send time of the attempt or extension that set it, from which a lease's local deadline
// is counted. queued, when not nil, is called once Redis answered the first attempt (see
// LeaseOptions.Queued).
func (p *Provider) acquireQueued(ctx context.Context, keys []string, h *holdings, ttl int64, queued func(), lease bool) (time.Time, error) {
	q := &queue{p: p, ctx: ctx, keys: normalizeKeys(keys), ttl: ttl, h: h,
		started: time.Now(), delay: p.waitBackoff(), queued: queued, learn: lease}
	if p.opts.FairQueue {
		q.ticket = h.claim
	}
	owner := h.owner
	defer func() {
		q.pollFast("")
		q.wake.stop()
		p.wakeups.attempted(h.claim, q.keys, time.Time{}, nil, nil) // a key handed to it that it never tried
		if q.listens {
			p.listen.unuse(false)
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

// waitBackoff is the backoff of one call's waits (Options.DefaultRetryInterval, BackoffFactor,
// MaximumRetryInterval), shared by all its keys: each sleep is 50–100 % of the delay, as stock
// Medusa's backoff does.
func (p *Provider) waitBackoff() backoff.Backoff {
	return backoff.Backoff{Initial: p.opts.DefaultRetryInterval, Max: p.opts.MaximumRetryInterval,
		Factor: p.opts.BackoffFactor, Jitter: 0.5}
}

// next tries every key not held yet in one round trip. When one is held by someone else, or
// Redis could not be reached for it, it keeps the keys before it, puts back those after it (see
// holdings and giveBackAfter), and waits for it.
func (q *queue) next() error {
	rest := q.keys[q.held:]
	res, sent, err := q.attempt(rest)
	if err != nil {
		return err
	}
	blocked := slices.IndexFunc(res, isHeld)
	if blocked < 0 && len(res) == len(rest) {
		q.took(len(rest), sent)
		return nil
	}
	if blocked < 0 {
		blocked = len(res) // Redis could not be reached for rest[blocked]
	}
	q.took(blocked, sent)
	key := q.keys[q.held]
	// Before the give-back below, which would otherwise wake this very wait.
	q.wake.narrow(key)
	if err := q.giveBackAfter(); err != nil {
		return err
	}
	// Keys held during a wait may expire meanwhile and must be confirmed after it; a wait that
	// holds nothing has nothing to confirm (the attempt that ends it sets the full TTL).
	q.waited = q.waited || q.held > 0
	return q.waitFor(key)
}

// giveBackAfter gives back what the call may hold on the keys after keys[held], the one it waits
// for, so that it holds a sorted prefix while it waits. While Redis cannot be reached (the last
// round trip, or this give-back, failed so) they stay in the holdings, to be given back after
// the next round trip that Redis answers, or by the call's failure; a later attempt on them
// re-enters what an earlier one took. Any other error ends the call.
func (q *queue) giveBackAfter() error {
	after := slices.DeleteFunc(slices.Clone(q.keys[q.held+1:]), func(k string) bool { return !q.h.touched[k] })
	if len(after) == 0 || q.down != nil {
		return nil
	}
	err := q.p.putBack(q.ctx, q.h.detach(after))
	switch {
	case err == nil:
		return nil
	case IsUnreachable(err) && !q.over():
		q.h.touch(after...)
		q.down = err
		return nil
	}
	return q.fail(fmt.Errorf("acquire %s: %w", quoteKeys(after), err))
}

// waiting tells that the call now waits for key, which Redis said is held: it starts the use of
// the Provider's wake-up listener and emits EventWaiting.
func (q *queue) waiting(key string) {
	if !q.listens {
		q.listens = true
		q.p.listen.use()
	}
	q.p.emit(EventWaiting, key, q.h.owner, 0, 0)
}

// waitFor waits for key, keys[held], retrying it with backoff and keeping the held keys alive.
// It returns once it took key, once it found a held key no longer the call's (held then points
// at that key), or with the error that ends the call. While Redis cannot be reached it sleeps
// the backoff delay alone (nothing else is due before Redis answers again) and then PINGs
// Redis before it sends an attempt.
func (q *queue) waitFor(key string) error {
	announced := false // EventWaiting was emitted for this wait
	for {
		// Next grows the delay for the round after this one, which a wake-up does not reset:
		// it grows after a wake-up too, as after any failed attempt. A wake-up only says the
		// key was free for an instant: when another caller wins the race, the key is held
		// again and this waiter's next sleep stays bounded by the backoff, as in stock. Not
		// resetting costs local waiters nothing (the next release here wakes them again at
		// once) and keeps waiters on a key that another process won from turning each local
		// release into a burst of fast polling.
		sleep := q.delay.Next()
		if q.down == nil {
			if !announced {
				announced = true
				q.waiting(key)
			}
			sleep = q.shorten(key, sleep)
		}
		if sleep > 0 {
			q.p.opts.Waker.Wait(q.wake.waitContext(), q.p.RedisKey(key), sleep)
		}
		q.wake.stop()
		if q.ctx.Err() != nil {
			return q.ended(key)
		}
		if q.untilRefresh() <= 0 {
			if lost, err := q.extend(q.held); err != nil || lost {
				return err
			}
			if q.down != nil {
				continue
			}
		}
		if q.down != nil {
			// Until Redis answers, a PING stands in for the attempt: the wait may end in the
			// middle of either, and a PING cut short leaves no attempt of unknown outcome.
			if err := q.p.client.Ping(q.ctx).Err(); q.over() {
				return q.cutShort(key, err)
			} else if IsUnreachable(err) {
				q.down = err
				continue
			}
		}
		res, sent, err := q.attempt([]string{key})
		if err != nil {
			return err
		}
		if len(res) == 1 && !isHeld(res[0]) {
			q.took(1, sent)
			return nil
		}
		if err := q.giveBackAfter(); err != nil {
			return err
		}
	}
}

// shorten is the sleep before the next attempt on key, at most sleep (the backoff's), once
// Redis answered the last one: until the held keys must be extended, the ticket refreshed, the
// others' turn ends or the next fast poll.
func (q *queue) shorten(key string, sleep time.Duration) time.Duration {
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
	return sleep
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
// holdings, up to a key handed to another waiter (see wakeups), which counts as held. It also
// registers the wake-up for a wait that follows. It returns the statuses of
// the keys Redis answered: all of batch, or those before the first that Redis could not be
// reached for (IsUnreachable; q.down then says why), whose outcome may be unknown: they stay in
// the holdings. Any other Redis error ends the call.
func (q *queue) attempt(batch []string) ([]int64, time.Time, error) {
	q.wake.stop()
	q.wake = q.p.wakeups.register(q.ctx, batch, q.h.claim, q.ticket, q.started)
	if q.learn {
		// Before the lease takes anything, as a round trip of the wait: it rides out an
		// unreachable Redis the same way, with nothing to undo.
		if err := q.p.epochs.learn(q.ctx); err != nil {
			switch {
			case q.over():
				return nil, time.Now(), q.cutShort(batch[0], err)
			case IsUnreachable(err):
				q.down = err
				return nil, time.Now(), nil
			}
			return nil, time.Now(), q.fail(fmt.Errorf("read the Redis server's run_id before taking %s: %w", quoteKeys(batch), err))
		}
		q.learn = false
	}
	// A key this Provider just freed for a call that waited longer is left to it (see wakeups):
	// it counts as held, and this call waits for it.
	sending := batch
	if i := q.p.wakeups.handedAway(q.h.claim, batch); i >= 0 {
		sending = batch[:i]
	}
	res, sent, err := q.send(sending)
	if err != nil {
		return nil, sent, err
	}
	if len(sending) < len(batch) && len(res) == len(sending) && q.down == nil {
		// The call waits for it; it is woken when the key is handed to it, or freed again.
		res = append(res, acquireHeld)
	}
	q.joined = ""
	if q.ticket != "" && len(res) > 0 && isHeld(res[0]) {
		q.joined = batch[0]
	}
	q.leftFor, q.overdue = 0, false
	if i := slices.IndexFunc(res, isHeld); i >= 0 {
		q.leftFor = time.Duration(-min(res[i], 0)) * time.Millisecond
		q.overdue = res[i] == acquireOverdue
	}
	if f := q.queued; f != nil && q.down == nil && (q.ticket == "" || q.joined != "" || !slices.ContainsFunc(res, isHeld)) {
		// With a ticket, only once the call is in the queue of the key it waits for (a key
		// blocked behind the first of a batch joins on the next attempt, at once) or holds its
		// keys: a call sent after it then queues behind it.
		q.queued = nil
		f()
	}
	return res, sent, nil
}

// send runs acquire.lua on batch (nothing when it is empty) and returns what attempt returns of
// it; q.down says whether Redis could be reached.
func (q *queue) send(batch []string) ([]int64, time.Time, error) {
	sent := time.Now()
	q.down = nil
	if len(batch) == 0 {
		return nil, sent, nil
	}
	// A key an earlier attempt of the call may have taken stays in the holdings, whatever
	// becomes of this one.
	fresh := slices.DeleteFunc(slices.Clone(batch), func(k string) bool { return q.h.touched[k] })
	q.h.touch(batch...)
	res, errs, err := q.p.acquireBatch(q.ctx, batch, q.h, q.ttl, true)
	q.h.unsent(fresh, err)
	q.p.wakeups.attempted(q.h.claim, batch, sent, res, errs)
	var down error
	for j, key := range batch {
		if errs[j] == nil {
			continue
		}
		if err != nil && q.over() {
			return nil, sent, q.cutShort(key, errs[j]) // the attempt was cut short by the end of the wait
		}
		if IsUnreachable(errs[j]) {
			down, res = errs[j], res[:j]
			break
		}
		if err == nil {
			err = errs[j]
		}
		q.p.emit(EventGaveUp, key, q.h.owner, time.Since(q.started), 0)
		return nil, sent, q.fail(fmt.Errorf("acquire %q: %w", key, err))
	}
	q.down = down
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
// else took it) sends the call back to waiting for it (see extend). When Redis cannot be
// reached, it sleeps a backoff delay and leaves q.waited set, so that the call confirms again.
func (q *queue) confirm() error {
	lost, err := q.extend(len(q.keys))
	if err != nil || lost || q.down == nil {
		q.waited = false
		return err
	}
	sleep.For(q.ctx, q.delay.Next())
	if q.ctx.Err() != nil {
		return q.ended(q.keys[0])
	}
	return nil
}

// extend checks that keys[:n] are still the call's and extends them to the full TTL, in one
// round trip (extend.lua, owner-checked). It reports whether one was lost (gone, another owner
// or another type): the call then holds only the keys before it and puts back those after it,
// so it holds a sorted prefix again (see giveBackAfter). When Redis cannot be reached, nothing is
// known of the keys: it reports none lost and sets q.down, and the caller extends them again
// after a backoff delay (their TTL may pass meanwhile: the extension that Redis answers then
// finds such a key lost). Any other Redis error ends the call.
func (q *queue) extend(n int) (lost bool, err error) {
	keys := q.keys[:n]
	sent := time.Now()
	res, errs, err := q.p.scriptBatch(q.ctx, extendScript, keys, mayResend, q.h.owner, q.ttl, q.h.claim)
	for i, key := range keys {
		if errs[i] == nil || isWrongType(errs[i]) {
			continue
		}
		if err != nil && q.over() {
			return false, q.cutShort(key, errs[i])
		}
		if IsUnreachable(errs[i]) {
			q.down = errs[i]
			return false, nil
		}
		if err == nil {
			err = errs[i]
		}
		q.p.emit(EventGaveUp, key, q.h.owner, time.Since(q.started), 0)
		return false, q.fail(fmt.Errorf("acquire %q: %w", key, err))
	}
	q.down = nil
	q.refreshed = sent
	for i, key := range keys {
		if errs[i] == nil && res[i] == 2 {
			// An operator revoked a key the call holds while it waited: the call must not
			// go on to hold it (extend.lua).
			q.p.emit(EventGaveUp, key, q.h.owner, time.Since(q.started), 0)
			return false, q.fail(fmt.Errorf("acquire %q: %w", key, ErrRevoked))
		}
	}
	for i := range keys {
		if errs[i] == nil && res[i] == 1 {
			continue
		}
		q.held = i
		return true, q.giveBackAfter()
	}
	return false, nil
}

// fail puts back what the call took and returns err (see holdings.failed).
func (q *queue) fail(err error) error {
	return q.h.failed(q.p.putBack(q.ctx, q.h), err)
}

// over reports whether the wait's ctx has ended, its deadline counting as passed the moment
// the clock says so: a connection whose deadline is the ctx's (redisconn's clients) can fail
// before the ctx's own timer has ended it, and that failure is the wait's end, not Redis's.
func (q *queue) over() bool {
	if q.ctx.Err() != nil {
		return true
	}
	d, ok := q.ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// cutShort is the error for a wait whose round trip on key ended with err because ctx ended:
// when err says that Redis could not be reached for a reason of its own (a connection that
// ended, not one that ctx cut), that is the last word on Redis, else the round trip before. A
// network timeout is ctx's: go-redis sets its connections' deadlines from ctx's.
func (q *queue) cutShort(key string, err error) error {
	<-q.ctx.Done() // over: if only its deadline has passed, its timer ends it at once
	var ne net.Error
	if IsUnreachable(err) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) &&
		!(errors.As(err, &ne) && ne.Timeout()) {
		q.down = err
	}
	return q.ended(key)
}

// ended is the error for a wait cut short by ctx while trying key: stock's conflict for key,
// matching ctx's cause. When the last round trip could not reach Redis, the conflict's cause
// also holds an *UnreachableError, and when ctx's cause is a wait's own timeout conflict
// (AcquireLease's) the error is a copy of that conflict carrying it: its message stays stock's
// "Timed-out acquiring lock.", and AcquireLease returns it as it is (a bare copy is not its
// own timeout, see endedBy).
func (q *queue) ended(key string) error {
	q.p.emit(EventGaveUp, key, q.h.owner, time.Since(q.started), 0)
	cause := context.Cause(q.ctx)
	if q.down == nil {
		ce := notAcquired(key)
		ce.cause = cause
		return q.fail(ce)
	}
	down := &UnreachableError{Err: q.down}
	if own, ok := cause.(*ConflictError); ok && own.Kind == ErrTimedOut {
		ce := *own
		ce.cause = errors.Join(own.cause, down)
		return q.fail(&ce)
	}
	ce := notAcquired(key)
	ce.cause = errors.Join(cause, down)
	return q.fail(ce)
}

// UnreachableError says that Redis could not be reached when a wait ended without its keys
// (Acquire with AwaitQueue, AcquireLease, Execute): its last round trip failed with Err (see
// IsUnreachable) before ctx or the call's timeout ended it. A wait rides out such failures
// until then (docs/waiting.md). It is never returned alone: the wait's *ConflictError, whose
// message stays stock's (a bridge forwards it verbatim), carries it as a cause, found with
// errors.As. Err is not unwrapped, so the conflict matches nothing more than it did (a dial
// timeout would match context.DeadlineExceeded).
type UnreachableError struct {
	// Err is the error of the last round trip.
	Err error
}

// Error says that Redis could not be reached, and why.
func (e *UnreachableError) Error() string { return "Redis could not be reached: " + e.Err.Error() }
