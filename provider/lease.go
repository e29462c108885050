package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/backoff"
)

// LeaseOptions are the arguments of AcquireLease.
type LeaseOptions struct {
	// Owner of the lease; "" gives a fresh "execute:<uuid v4>", as stock execute does.
	Owner string
	// Timeout bounds the wait for every key; default Options.WaitLockingTimeout (5 s).
	Timeout time.Duration
	// Expire is the lease, renewed every max(Expire/3, 250 ms) while held; zero (or negative)
	// means DefaultLeaseExpire (60 s); rounded up to whole seconds. NoExpiry is refused
	// (ErrInvalidArgument): a lease always expires.
	Expire time.Duration
	// Queued, when set, is called once, as soon as Redis has answered the call's first attempt
	// (the call then holds the keys or waits for them; with Options.FairQueue, once it is in the
	// queue of the key it waits for), or that attempt found its first key handed to a call that
	// waited longer (see docs/waiting.md) and sent nothing; it is not called when the call ends
	// before that. A caller
	// that must keep the order of its calls on the same keys (the bridge keeps each
	// connection's) starts the next call then: the first call sent wins a free key and, with
	// the fair queue, the calls are granted in the order sent. It must not block.
	Queued func()
	// Holder names the taking process in the holder records (a bridge passes its client's);
	// the zero value writes Options.Holder.
	Holder Holder
}

// Lease is a set of keys held under one owner and renewed in the background until Release, or
// until it is lost (Done is then closed and Err returns a *ConflictError matching ErrLockLost):
// a renewal found a key gone or owned by someone else, the lease's local deadline passed before
// a renewal was confirmed (see Deadline), whatever the network does meanwhile, or the Redis
// server restarted or failed over (a new run_id, read every 500 ms while leases are held),
// which may have lost its keys.
type Lease struct {
	p        *Provider
	keys     []string // sorted, without namespace
	order    []string // the caller's order, de-duplicated: for messages
	owner    string
	claim    string           // the acquisition's, in the holder records
	tokens   map[string]int64 // the fencing token of every key
	resend   resend           // sendOnce when the owner may be shared (LeaseOptions.Owner)
	ttl      int64
	interval time.Duration
	acquired time.Time

	ctx    context.Context // cancelled with the loss as cause, or by Release
	cancel context.CancelCauseFunc
	retry  backoff.Backoff // the waits before the retries of a failed renewal; renewals only

	stopOnce sync.Once
	mu       sync.Mutex    // guards the fields below
	deadline time.Time     // see Deadline
	expiry   *time.Timer   // fires at deadline (or earlier, then re-arms itself)
	renewal  *time.Timer   // fires the next renewal (renew.go)
	renewing chan struct{} // closed when the renewal in flight ends; nil when none is
	due      time.Time     // when the next renewal is due (a check leaves it as it is)
	check    bool          // the next firing of the renewal timer checks the keys (checkSoon)
	again    bool          // checkSoon asked while a renewal was in flight
	heard    string        // the event checkSoon was asked for, until a check reads it
	checks   atomic.Int64  // checks run (checkSoon), for tests
	stopped  bool          // Release or Abandon stopped the renewals
	lastErr  error         // why the last renewal failed, nil after a confirmed one
	ended    bool          // the release script ran, or Abandon stopped the lease
	released bool          // its result: every key was still ours
}

// SafetyMargin is how much of a lease's TTL the holder gives up to stay safe: a lease is lost
// locally at (send time of its last confirmed renewal, or of its acquisition) + TTL −
// SafetyMargin(TTL), a tenth of the TTL. Redis cannot expire the keys before that moment, since
// it received the command after it was sent, as long as the clocks of this host and of Redis run
// at rates within 10 % of each other, less the time the holder needs to notice (see
// docs/safety.md).
func SafetyMargin(ttl time.Duration) time.Duration { return ttl / 10 }

// Renewal retry after a failed renewal: renewRetryMin, doubling up to the renewal interval.
const renewRetryMin = 100 * time.Millisecond

// AcquireLease waits up to opts.Timeout for every key and returns a renewed lease. When the
// timeout passes first it returns a *ConflictError matching ErrTimedOut ("Timed-out acquiring
// lock.") and context.DeadlineExceeded after giving back every key it took; when ctx ends first
// it returns a *ConflictError matching ErrNotAcquired and ctx's cause (errors.Is(err,
// context.Canceled) holds), as a queued Acquire does (see ConflictError). The lease does not end
// with ctx: call Release.
//
// Keys are taken in sorted order; while it waits for one, the call holds the keys before it and
// extends them every Expire/3. After a wait during which it held keys, every key is confirmed
// to be the lease's and extended to the full Expire before the lease is returned; a key lost
// meanwhile is waited for again within the timeout. Without a wait, taking the keys is one round
// trip (and, for a Provider's first lease, one more before it: the server's run_id, see Lease).
// A Redis that cannot be reached is ridden out within the timeout (docs/waiting.md).
//
// A grant whose reply comes back with less than SafetyMargin of the TTL left before the lease's
// own deadline (a slow link: Redis may already have expired a key, or would before the holder
// could start), or after a wait during which the server changed (a failover), is given back and
// the keys are tried again within the timeout.
//
// On failure everything the call did is undone as for a failed Acquire, claim-checked: also on
// a key whose reply was lost. That give-back runs even after ctx ended, bounded to 5 s (after a
// wait, bounded the same, for an attempt still in flight): with Redis unreachable, it may delay
// the return by the client's dial retries, and the error then matches ErrOutcomeUnknown. Without opts.Owner the owner is this call's own; with it, the
// lease's release is never resent (see Release).
func (p *Provider) AcquireLease(ctx context.Context, keys []string, opts LeaseOptions) (*Lease, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: a lease needs at least one key", ErrInvalidArgument)
	}
	if opts.Expire == NoExpiry {
		return nil, errNoExpiryLease
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
	h, confirmed, since, err := p.acquireInTime(waitCtx, sorted, owner, ttl, opts.Queued, opts.Holder)
	if err != nil {
		return nil, endedBy(err, timeoutErr)
	}
	interval := max(time.Duration(ttl)*time.Second/3, MinRenewInterval)
	l := &Lease{
		p:        p,
		keys:     sorted,
		order:    uniqueInOrder(keys),
		owner:    owner,
		claim:    h.claim,
		tokens:   h.tokens,
		resend:   mayResend,
		ttl:      ttl,
		interval: interval,
		acquired: time.Now(),
		retry:    backoff.Doubling(renewRetryMin, interval),
	}
	if opts.Owner != "" {
		l.resend = sendOnce
	}
	l.ctx, l.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	l.mu.Lock()
	l.deadline = l.deadlineAfter(confirmed)
	l.expiry = time.AfterFunc(time.Until(l.deadline), l.checkDeadline)
	l.due = time.Now().Add(l.interval)
	l.renewal = time.AfterFunc(l.interval, l.renew)
	// Under l.mu, so that a loss at the deadline, which takes l.mu first, finds the lease
	// registered and takes it off (unwatch). The epoch watcher never holds its own lock while it
	// takes a lease's.
	watched := p.epochs.add(l, since)
	p.holding.add(l)
	p.listen.use()
	l.mu.Unlock()
	if !watched { // a probe found the server changed after acquireInTime checked
		l.lose(l.order, errChangedDuringWait)
	}
	return l, nil
}

// errChangedDuringWait is the cause of a lease whose wait saw the Redis server change.
var errChangedDuringWait = fmt.Errorf("%w while the lease was being taken: keys it took before may be gone", ErrServerRestarted)

// acquireInTime takes every key for a lease of ttl seconds and returns its holdings and the send
// time its deadline counts from. A grant whose reply came back with less than the safety margin
// left before that deadline (a slow link) is given back, claim-checked, and the keys are tried
// again under a new claim until ctx ends: the holder must never start believing when Redis may
// already have expired a key, nor with a lease it would lose as it starts.
// A grant after a wait during which a probe found the server changed (a failover) is given back
// and tried again the same way: it may hold keys of the old server. It also returns the count of
// server changes the grant was checked against (epochs.add).
// queued and holder are LeaseOptions.Queued and LeaseOptions.Holder.
func (p *Provider) acquireInTime(ctx context.Context, keys []string, owner string, ttl int64, queued func(), holder Holder) (*holdings, time.Time, uint64, error) {
	for {
		h := p.newHoldings(owner, "", holder)
		h.lease = true
		since := p.epochs.changed()
		confirmed, err := p.acquireQueued(ctx, keys, h, ttl, queued, true)
		queued = nil // called by the first try
		if err != nil {
			return nil, time.Time{}, 0, err
		}
		margin := SafetyMargin(time.Duration(ttl) * time.Second)
		left := time.Until(deadlineAfter(confirmed, ttl))
		changed := p.epochs.changed() != since
		if left >= margin && !changed {
			return h, confirmed, since, nil
		}
		if changed {
			p.opts.Logger.Warn("the Redis server changed (a failover or a restart) while a lease was being taken; giving it back and trying again",
				"keys", keys, "owner", owner)
		} else {
			p.opts.Logger.Warn("a lease was granted with less than its safety margin left before its deadline (Redis replied too late); giving it back and trying again",
				"keys", keys, "owner", owner, "left", left, "margin", margin)
		}
		if err := p.putBack(context.WithoutCancel(ctx), h); err != nil { // bounded by cleanupTimeout
			return nil, time.Time{}, 0, h.failed(err, fmt.Errorf("acquire lock for key(s) %s: granted too late", quoteKeys(keys)))
		}
		if ctx.Err() != nil {
			ce := notAcquired(keys[0]) // the grant was given back: the wait starts again at the first key
			ce.cause = context.Cause(ctx)
			return nil, time.Time{}, 0, ce
		}
	}
}

// deadlineAfter is the local deadline of a lifetime of ttl seconds requested at sent.
func deadlineAfter(sent time.Time, ttl int64) time.Time {
	lifetime := time.Duration(ttl) * time.Second
	return sent.Add(lifetime - SafetyMargin(lifetime))
}

// deadlineAfter is the local deadline of the lease's lifetime requested at sent.
func (l *Lease) deadlineAfter(sent time.Time) time.Time { return deadlineAfter(sent, l.ttl) }

// Deadline returns the moment the lease is lost locally unless a renewal is confirmed first:
// the send time of the last confirmed renewal (or of the acquisition) plus the TTL less
// SafetyMargin. At that moment Done is closed, whether or not Redis can be reached; a renewal
// that is confirmed later no longer counts. The keys cannot expire in Redis before it.
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// checkDeadline runs when the expiry timer fires: the lease is lost unless a renewal moved the
// deadline meanwhile, in which case the timer is armed again for the new one.
func (l *Lease) checkDeadline() {
	l.mu.Lock()
	left, cause := time.Until(l.deadline), l.lastErr
	if left > 0 {
		l.expiry.Reset(left)
	}
	l.mu.Unlock()
	if left > 0 || l.ctx.Err() != nil {
		return
	}
	if cause == nil {
		cause = errNoRenewal
	}
	l.lose(l.order, cause)
}

// confirm records a renewal sent at sent that Redis confirmed for every key. It reports false
// when the lease ended meanwhile (lost at its deadline, or released), so the result no longer
// counts.
func (l *Lease) confirm(sent time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx.Err() != nil {
		return false
	}
	l.deadline, l.lastErr = l.deadlineAfter(sent), nil
	return true
}

// failed records why a renewal failed, for the loss that may follow.
func (l *Lease) failed(err error) {
	l.mu.Lock()
	l.lastErr = err
	l.mu.Unlock()
}

// lose ends the lease as lost on keys (in the caller's order), with cause, when known, as the
// reason (the last renewal error). Only the first end counts, a Release included.
func (l *Lease) lose(keys []string, cause error) {
	lostErr := lockLost(keys, cause)
	l.mu.Lock()
	first := l.ctx.Err() == nil
	l.cancel(lostErr)
	l.mu.Unlock()
	if !first {
		return
	}
	l.unwatch()
	if cause != nil {
		l.p.opts.Logger.Warn(lostErr.Error(), "owner", l.owner, "cause", cause)
	} else {
		l.p.opts.Logger.Warn(lostErr.Error(), "owner", l.owner)
	}
	for _, key := range keys {
		l.p.emit(EventLost, key, l.owner, 0, time.Since(l.acquired))
	}
}

// Keys returns the leased keys, sorted, de-duplicated, without namespace.
func (l *Lease) Keys() []string { return slices.Clone(l.keys) }

// Owner returns the lease's owner id.
func (l *Lease) Owner() string { return l.owner }

// FencingToken returns the lease's fencing token (see docs/fencing.md): the token of its key,
// or, for a lease of several keys, of the first of Keys (each key has its own: FencingTokens).
// Pass it with every write to a store that checks it, so that a write made after the lease was
// lost, by a holder that did not notice in time, is refused once a later holder wrote.
func (l *Lease) FencingToken() int64 { return FencingTokenOf(l.tokens) }

// FencingTokens returns the fencing token of every key of the lease.
func (l *Lease) FencingTokens() map[string]int64 { return maps.Clone(l.tokens) }

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

// errAbandoned is the cause of a lease context ended by Abandon.
var errAbandoned = errors.New("provider: lease abandoned")

// Abandon stops the renewal without deleting anything: the keys expire with their TTL. It is for
// a holder that must stop renewing but cannot know that the lease's job has stopped believing
// (a process shutting down before it could tell it). Done is closed; a later Release deletes
// nothing and reports false. It does nothing after Release.
func (l *Lease) Abandon() {
	l.stopOnce.Do(func() {
		l.mu.Lock()
		l.cancel(errAbandoned)
		l.ended = true
		l.mu.Unlock()
		l.stopRenewals()
	})
}

// Release stops the renewal and deletes every key still held by the lease's owner. It reports
// whether every key was released (false after a loss). Once the keys were released, calling it
// again returns the same result; after a Redis error it may be called again to retry. A
// cancelled ctx still releases (the clean-up is bounded separately).
func (l *Lease) Release(ctx context.Context) (bool, error) {
	l.stopOnce.Do(func() {
		// Cancel before waiting: an in-flight renewal (bounded only by the deadline) is cut
		// short instead of holding up the release. A loss recorded earlier stays the cause;
		// the renewal sees the lease stopped and records nothing more.
		l.mu.Lock()
		l.cancel(errReleased)
		l.mu.Unlock()
		l.stopRenewals()
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return l.released, nil
	}
	held := time.Since(l.acquired)
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	res, errs, err := l.p.deleteBatch(ctx, releaseScript, l.keys, l.resend, l.owner, nil, held, true)
	if err == nil {
		// A key that now holds another type is no longer ours: not released, not an error.
		err = errors.Join(slices.DeleteFunc(slices.Clone(errs), isWrongType)...)
	} else if l.resend == sendOnce && maybeRan(err) {
		err = fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
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
