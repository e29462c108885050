package provider

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/lockwire"
)

// Provider takes, renews and releases locks in one Redis namespace. It is safe for concurrent
// use; it owns no goroutine of its own except, while any of its calls waits for a held key or
// any of its leases is held (and listenLinger after), one pub/sub connection that wakes waiters
// when a key is freed and tells holders what happens to their keys (docs/waiting.md, hear.go);
// Close stops it. The
// renewals of its leases and, while it holds any, the watch for a restarted Redis server (see
// Lease) run on timers, in a goroutine only while one fires.
type Provider struct {
	client  redis.UniversalClient
	opts    Options
	channel string // FreeChannel(namespace)
	// wakeups are this Provider's calls waiting for a key, woken when the key is freed.
	wakeups wakeups
	fast    fastPollers // share.go
	// contended are the keys this Provider's attempts found held lately (share.go).
	contended contention
	// holding are its live leases by key, told what the listener hears of their keys (hear.go).
	holding holders
	// listen is the one pub/sub connection that hears of keys freed by anyone.
	listen listener
	// epochs ends every lease when the Redis server restarts or fails over.
	epochs epochs
	// batch merges the script pipelines of concurrent calls.
	batch batcher
	// run runs the scripts, through batch.
	run lockwire.Runner
}

// New returns a Provider on client (standalone, Sentinel or Cluster). opts may be nil.
// The caller keeps ownership of client and closes it.
func New(client redis.UniversalClient, opts *Options) *Provider {
	p := &Provider{client: client, opts: opts.withDefaults()}
	p.channel = FreeChannel(p.opts.Namespace)
	p.run = lockwire.Runner{Namespace: p.opts.Namespace, Channel: p.channel,
		Send: func(ctx context.Context, cmds []redis.Cmder, once bool) error {
			return p.batch.exec(ctx, p.client, cmds, once)
		}}
	p.epochs.p = p
	p.listen.p = p
	return p
}

// Close stops the Provider's wake-up listener at once, instead of listenLinger after its last
// waiter or lease (see docs/waiting.md); call it when the Provider is no longer used (its leases
// released). It does not close the client.
func (p *Provider) Close() {
	p.listen.stop(true)
	p.epochs.stop()
}

// Namespace returns the key prefix in use.
func (p *Provider) Namespace() string { return p.opts.Namespace }

// Client returns the Redis client the provider uses.
func (p *Provider) Client() redis.UniversalClient { return p.client }

// RedisKey returns the Redis key of a lock key: Namespace+key, as stock Medusa builds it.
func (p *Provider) RedisKey(key string) string { return p.opts.Namespace + key }

// NewExecuteOwner returns a fresh Execute owner, "execute:<uuid v4>", as stock Medusa makes one.
func NewExecuteOwner() string { return ExecuteOwnerPrefix + uuid.NewString() }

// NewClaim returns a fresh claim: the id of one acquisition call, written in the holder record
// of every lock the call takes (see AcquireOptions.Claim).
func NewClaim() string { return uuid.NewString() }

// ownerOrDefault maps an empty owner to the anonymous owner "*", as stock does with null.
func ownerOrDefault(owner string) string {
	if owner == "" {
		return DefaultOwner
	}
	return owner
}

// acquireExpire is the TTL an Acquire asks for: DefaultLeaseExpire for zero, else as given
// (NoExpiry included).
func acquireExpire(d time.Duration) time.Duration {
	if d == 0 {
		return DefaultLeaseExpire
	}
	return d
}

// StockAcquireExpire is the AcquireOptions.Expire that gives what stock Medusa's acquire does
// with an expire of d: NoExpiry for zero (stock's acquire without expire, or with 0: a lock
// that never expires), else d. A caller that takes stock's arguments (the bridge, locktui
// acquire) passes them through it.
func StockAcquireExpire(d time.Duration) time.Duration {
	if d == 0 {
		return NoExpiry
	}
	return d
}

// ttlSeconds renders a lock TTL as stock sends it: whole seconds, at least 1, "0" for NoExpiry.
// A duration that is not a whole number of seconds is rounded up, so a lease is never shorter
// than asked (stock Medusa rejects fractional seconds with a Redis error instead).
func ttlSeconds(d time.Duration) int64 {
	if d == NoExpiry {
		return 0
	}
	if d < time.Second {
		return 1
	}
	return int64(math.Ceil(d.Seconds()))
}

// normalizeKeys drops duplicate keys and returns them in sorted order: the order in which every
// multi-key call takes them, so two callers naming the same keys in opposite orders cannot
// deadlock.
func normalizeKeys(keys []string) []string {
	out := slices.Clone(keys)
	slices.Sort(out)
	return slices.Compact(out)
}

// deleteBatch runs a deleting script (release, revoke or giveback, owner-checked: 1 means it
// deleted the lock) over keys with the arguments owner followed by extra, like scriptBatch. For
// every key it really deleted it first tells the Observer (EventReleased, with held, unless
// announce is false) and then wakes this Provider's waiters on the key that do not queue (the
// script itself announced the free key on FreeChannel to everyone), in that order, so
// observers never see a waiter's acquisition before the release that let it in.
func (p *Provider) deleteBatch(ctx context.Context, s *lockwire.Script, keys []string, r resend, owner string, extra []any,
	held time.Duration, announce bool) (results []int64, errs []error, err error) {
	p.wakeups.hold(keys)
	freed := make([]bool, len(keys))
	defer func() { p.wakeups.unhold(keys, freed) }()
	results, errs, err = p.scriptBatch(ctx, s, keys, r, append([]any{owner}, extra...)...)
	for i, key := range keys {
		if errs[i] == nil && results[i] == 1 {
			freed[i] = true
			if announce {
				p.emit(EventReleased, key, owner, 0, held)
			}
			p.wakeups.wake(key)
		}
	}
	return results, errs, err
}

// cleanupTimeout bounds a clean-up (giving keys back, releasing a lease).
const cleanupTimeout = 5 * time.Second

// cleanupContext is for giving keys back, also after the caller's context ended: it keeps the
// caller's values, drops its cancellation and bounds the clean-up by cleanupTimeout, or by the
// caller's deadline when that is earlier and still ahead (a caller bounding a release).
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(cleanupTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) && time.Until(d) > 0 {
		deadline = d
	}
	return context.WithDeadline(context.WithoutCancel(ctx), deadline)
}

// uniqueInOrder drops repeated keys and keeps the caller's order.
func uniqueInOrder(keys []string) []string {
	seen := make(map[string]bool, len(keys))
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// emit hands one event to the Observer. An Observer that panics is a bug in the caller's
// metrics or logging, not a reason to lose a lock: the panic is logged and the lock goes on.
func (p *Provider) emit(kind EventKind, key, owner string, wait, held time.Duration) {
	if p.opts.Observer == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			p.opts.Logger.Error("lock event observer panicked", "event", kind, "key", key, "panic", r)
		}
	}()
	p.opts.Observer.LockEvent(Event{Kind: kind, Key: key, Owner: owner, Time: time.Now(), Wait: wait, Held: held})
}
