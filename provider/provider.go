package provider

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

var (
	//go:embed scripts/acquire.lua
	acquireSrc string
	//go:embed scripts/extend.lua
	extendSrc string
	//go:embed scripts/release.lua
	releaseSrc string
	//go:embed scripts/restore.lua
	restoreSrc string
	//go:embed scripts/unlink.lua
	unlinkSrc string

	acquireScript = redis.NewScript(acquireSrc)
	extendScript  = redis.NewScript(extendSrc)
	releaseScript = redis.NewScript(releaseSrc)
	restoreScript = redis.NewScript(restoreSrc)
	unlinkScript  = redis.NewScript(unlinkSrc)
)

// Statuses of acquire.lua.
const (
	acquireHeld      = 0 // someone else holds the key
	acquireFresh     = 1 // the key was free and is now ours
	acquireReentered = 2 // the owner already held it; the TTL was rewritten
)

// acquireReply is acquire.lua's reply for one key: {status} or, on re-entry, {2, previous PTTL}.
type acquireReply struct {
	status int64
	// prevPTTL is, on re-entry, the key's PTTL in milliseconds before the script rewrote it
	// (-1: it had no expiry), so that a failed call can restore it.
	prevPTTL int64
}

// parseAcquireReply reads acquire.lua's reply.
func parseAcquireReply(cmd *redis.Cmd) (acquireReply, error) {
	v, err := cmd.Int64Slice()
	switch {
	case err != nil:
		return acquireReply{}, err
	case len(v) == 0:
		return acquireReply{}, errors.New("acquire script: empty reply")
	case len(v) == 1:
		return acquireReply{status: v[0]}, nil
	}
	return acquireReply{status: v[0], prevPTTL: v[1]}, nil
}

// Provider takes, renews and releases locks in one Redis namespace. It is safe for concurrent
// use; it owns no goroutine except the renewal of leases it hands out. When it deletes a key, its
// own calls waiting for that key retry at once instead of sleeping out their backoff.
type Provider struct {
	client redis.UniversalClient
	opts   Options
	// wakeups are this Provider's calls waiting for a key, woken when it deletes the key.
	wakeups wakeups
}

// New returns a Provider on client (standalone, Sentinel or Cluster). opts may be nil.
// The caller keeps ownership of client and closes it.
func New(client redis.UniversalClient, opts *Options) *Provider {
	return &Provider{client: client, opts: opts.withDefaults()}
}

// Namespace returns the key prefix in use.
func (p *Provider) Namespace() string { return p.opts.Namespace }

// Client returns the Redis client the provider uses.
func (p *Provider) Client() redis.UniversalClient { return p.client }

// RedisKey returns the Redis key of a lock key: Namespace+key, as stock Medusa builds it.
func (p *Provider) RedisKey(key string) string { return p.opts.Namespace + key }

// NewExecuteOwner returns a fresh Execute owner, "execute:<uuid v4>", as stock Medusa makes one.
func NewExecuteOwner() string { return ExecuteOwnerPrefix + uuid.NewString() }

// ownerOrDefault maps an empty owner to the anonymous owner "*", as stock does with null.
func ownerOrDefault(owner string) string {
	if owner == "" {
		return DefaultOwner
	}
	return owner
}

// ttlSeconds renders a lock TTL as stock sends it: whole seconds, at least 1, "0" for no expiry.
// A duration that is not a whole number of seconds is rounded up, so a lease is never shorter
// than asked (stock Medusa rejects fractional seconds with a Redis error instead).
func ttlSeconds(d time.Duration) int64 {
	if d == 0 {
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

// scriptBatch runs one script over many keys in a single pipeline, with the same arguments for
// every key, and reads integer replies (see evalBatch).
func (p *Provider) scriptBatch(ctx context.Context, s *redis.Script, keys []string, args ...any) (results []int64, errs []error, err error) {
	return evalBatch(ctx, p, s, keys, func(int) []any { return args }, (*redis.Cmd).Int64)
}

// acquireBatch runs acquire.lua over keys in a single pipeline (see evalBatch).
func (p *Provider) acquireBatch(ctx context.Context, keys []string, owner string, ttl int64) ([]acquireReply, []error, error) {
	args := []any{owner, ttl}
	return evalBatch(ctx, p, acquireScript, keys, func(int) []any { return args }, parseAcquireReply)
}

// evalBatch runs one script over many keys in a single pipeline, key i with the arguments
// argsOf(i). results[i] is key i's reply, read with parse, when errs[i] is nil; errs[i] is its
// Redis error (a reply error such as WRONGTYPE, or the transport error when the pipeline
// failed). err is the first transport error, wrapped: then the keys with an error have an
// unknown outcome (the script may have run, go-redis may even have run it twice), while the
// results of the others are still valid. NOSCRIPT replies (a flushed script cache, a failover)
// are retried once with the full script text.
func evalBatch[T any](ctx context.Context, p *Provider, s *redis.Script, keys []string, argsOf func(i int) []any,
	parse func(*redis.Cmd) (T, error)) (results []T, errs []error, err error) {
	results = make([]T, len(keys))
	errs = make([]error, len(keys))
	pending := make([]int, len(keys))
	for i := range keys {
		pending[i] = i
	}
	for attempt := 0; attempt < 2 && len(pending) > 0; attempt++ {
		pipe := p.client.Pipeline()
		cmds := make([]*redis.Cmd, len(pending))
		for j, i := range pending {
			if attempt == 0 {
				cmds[j] = s.EvalSha(ctx, pipe, []string{p.RedisKey(keys[i])}, argsOf(i)...)
			} else {
				cmds[j] = s.Eval(ctx, pipe, []string{p.RedisKey(keys[i])}, argsOf(i)...)
			}
		}
		_, _ = pipe.Exec(ctx)
		var retry []int
		for j, i := range pending {
			v, cmdErr := parse(cmds[j])
			errs[i] = cmdErr
			switch {
			case cmdErr == nil:
				results[i] = v
			case redis.HasErrorPrefix(cmdErr, "NOSCRIPT"):
				retry = append(retry, i)
			case isReplyError(cmdErr):
			case err == nil:
				err = fmt.Errorf("redis: %w", cmdErr)
			}
		}
		if err != nil {
			return results, errs, err
		}
		pending = retry
	}
	return results, errs, nil
}

// deleteBatch runs a deleting script (release or unlink, owner-checked: 1 means deleted) over
// keys like scriptBatch. For every key it really deleted it first tells the Observer
// (EventReleased, with held, unless announce is false) and then wakes this Provider's waiters on
// the key, in that order, so observers never see a waiter's acquisition before the release that
// let it in.
func (p *Provider) deleteBatch(ctx context.Context, s *redis.Script, keys []string, owner string, held time.Duration, announce bool) (results []int64, errs []error, err error) {
	results, errs, err = p.scriptBatch(ctx, s, keys, owner)
	for i, key := range keys {
		if errs[i] == nil && results[i] == 1 {
			if announce {
				p.emit(EventReleased, key, owner, 0, held)
			}
			if p.opts.WakeLocalWaiters {
				p.wakeups.wake(key)
			}
		}
	}
	return results, errs, err
}

// isReplyError tells a Redis error reply (the command ran and failed) from a transport error.
func isReplyError(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !errors.Is(err, redis.Nil) && !isNetworkReply(err)
}

// isNetworkReply reports errors that go-redis types as redis.Error but that mean the server
// could not run the command (loading, failing over); they are treated as transport errors.
func isNetworkReply(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "LOADING") || strings.HasPrefix(msg, "READONLY") ||
		strings.HasPrefix(msg, "MASTERDOWN") || strings.HasPrefix(msg, "CLUSTERDOWN") ||
		strings.HasPrefix(msg, "TRYAGAIN")
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
