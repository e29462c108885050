package bridge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/locktui/locktui/provider"
)

// Lease defaults, as stock execute's.
const (
	defaultLeaseTimeout = provider.DefaultWaitLockingTimeout
	defaultLeaseExpire  = provider.DefaultLeaseExpire
	// leaseIDPrefix starts every lease id: "L1", "L2", … per connection.
	leaseIDPrefix = "L"
)

// timedOutMessage is stock execute's timeout message, also given to a lease whose wait the
// client cancelled (the provider then returns the cancellation cause, not a ConflictError).
const timedOutMessage = "Timed-out acquiring lock."

// handleFrame decodes and dispatches one text frame. It reports false when the connection has
// used up its budget of invalid frames and must be closed.
func (c *conn) handleFrame(frame []byte) bool {
	req, err := DecodeRequest(frame)
	if err != nil {
		var perr *Error
		if !errors.As(err, &perr) {
			perr = newError(CodeBadRequest, err.Error())
		}
		op := opInvalid
		if req.Op != "" {
			op = string(req.Op)
		}
		c.reply(op, req.ID, nil, perr)
		return c.allowBadFrame()
	}
	if len(req.Keys) > c.limits.MaxKeys {
		c.reply(string(req.Op), req.ID, nil, newError(CodeTooManyKeys,
			fmt.Sprintf("too many keys in one request: %d, the limit is %d", len(req.Keys), c.limits.MaxKeys)))
		return true
	}
	c.start(req)
	return true
}

// start admits a request and serves it: ping and cancel at once, every other op in a goroutine
// of its own, within the connection's limits.
func (c *conn) start(req Request) {
	key := idKey(req.ID)
	c.mu.Lock()
	var refuse *Error
	switch {
	case c.stopping:
		refuse = newError(CodeShuttingDown, "the bridge is shutting down")
	case c.inflight[key] != nil:
		refuse = newError(CodeDuplicateID, fmt.Sprintf("id %s is already in flight on this connection", req.ID))
	case req.Op == OpPing || req.Op == OpCancel:
	case c.running >= c.limits.MaxInFlight:
		refuse = newError(CodeTooManyRequests,
			fmt.Sprintf("too many requests in flight on this connection: the limit is %d", c.limits.MaxInFlight))
	case req.Op == OpLease && len(c.leases)+c.leasesPending >= c.limits.MaxLeases:
		refuse = newError(CodeTooManyLeases,
			fmt.Sprintf("too many leases on this connection: the limit is %d", c.limits.MaxLeases))
	}
	if refuse != nil || req.Op == OpPing || req.Op == OpCancel {
		c.mu.Unlock()
		switch {
		case refuse != nil:
			c.reply(string(req.Op), req.ID, nil, refuse)
		case req.Op == OpPing:
			c.reply(string(req.Op), req.ID, emptyResult{}, nil)
		default:
			c.reply(string(req.Op), req.ID, cancelledResult{Cancelled: c.cancelRequest(req.Target)}, nil)
		}
		return
	}
	ctx, cancel := context.WithCancelCause(c.ctx)
	entry := &inflight{}
	if req.Op == OpLease || (req.Op == OpAcquire && req.AwaitQueue) {
		entry.cancel = cancel
	}
	c.inflight[key] = entry
	c.running++
	if req.Op == OpLease {
		c.leasesPending++
	}
	c.requests.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.requests.Done()
		defer c.recoverInternal()
		defer cancel(nil)
		result, err := c.do(ctx, req)
		c.mu.Lock()
		delete(c.inflight, key) // before the reply: the client may reuse the id once answered
		c.mu.Unlock()
		c.reply(string(req.Op), req.ID, result, err)
		// Only now is the slot free: a client that does not read its replies cannot pile up
		// goroutines waiting for the writer.
		c.mu.Lock()
		c.running--
		c.mu.Unlock()
	}()
}

// cancelRequest ends the wait of an in-flight acquire or lease; other requests finish on their
// own and are not cancelled.
func (c *conn) cancelRequest(target []byte) bool {
	c.mu.Lock()
	r := c.inflight[idKey(target)]
	c.mu.Unlock()
	if r == nil || r.cancel == nil {
		return false
	}
	r.cancel(errCancelled)
	return true
}

// do runs one op.
func (c *conn) do(ctx context.Context, req Request) (any, *Error) {
	switch req.Op {
	case OpAcquire:
		return c.acquire(ctx, req)
	case OpRelease:
		if err := c.checkOwner(req.Owner); err != nil {
			return nil, err
		}
		released, err := c.s.prov.Release(ctx, req.Keys, req.Owner)
		return releasedResult{Released: released}, mapError(ctx, err)
	case OpReleaseAll:
		if err := c.checkOwner(req.Owner); err != nil {
			return nil, err
		}
		n, err := c.s.prov.ReleaseAll(ctx, req.Owner)
		return countResult{Count: n}, mapError(ctx, err)
	case OpLease:
		return c.lease(ctx, req)
	case OpLeaseRelease:
		return c.leaseRelease(ctx, req.Lease)
	default: // DecodeRequest admits no other op
		return nil, newError(CodeUnknownOp, "unknown op "+quote(string(req.Op)))
	}
}

func (c *conn) acquire(ctx context.Context, req Request) (any, *Error) {
	if err := c.checkOwner(req.Owner); err != nil {
		return nil, err
	}
	if req.AwaitQueue && req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	err := c.s.prov.Acquire(ctx, req.Keys, provider.AcquireOptions{
		Owner: req.Owner, Expire: req.Expire, AwaitQueue: req.AwaitQueue})
	if err == nil {
		return emptyResult{}, c.giveBackIfClosing(ctx, req)
	}
	if req.AwaitQueue && ctx.Err() != nil && isContextError(ctx, err) && !errors.Is(err, provider.ErrNotAcquired) &&
		!errors.Is(context.Cause(ctx), errShuttingDown) {
		// The wait ended while a Redis call was in flight, and the provider reported that call's
		// context error instead of its conflict: answer as for any ended wait, naming the first
		// key in the order the provider takes them. Any other error (a reply error such as
		// WRONGTYPE) is reported as it is.
		return nil, newError(CodeNotAcquired, notAcquiredMessage(slices.Min(req.Keys)))
	}
	return nil, mapError(ctx, err)
}

// isContextError reports whether err is a context's error or ctx's cause rather than an error
// of Redis.
func isContextError(ctx context.Context, err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Cause(ctx))
}

// giveBackIfClosing handles an acquire that succeeded as its connection ended, so that its reply
// may never reach the client. A lock of the anonymous owner "*" is then given back,
// owner-checked, and the request fails: "*" is never re-entrant, so its success means that every
// key was free and is held by this request alone; left alone, a "*" lock without expiry would
// stay forever. A named owner may have held the keys before (a re-entry): its locks are kept,
// and it reclaims them with release or release_all.
func (c *conn) giveBackIfClosing(ctx context.Context, req Request) *Error {
	if req.Owner != "" && req.Owner != provider.DefaultOwner {
		return nil
	}
	c.mu.Lock()
	closing := c.closing
	c.mu.Unlock()
	if !closing {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if _, err := c.s.prov.Release(ctx, req.Keys, provider.DefaultOwner); err != nil {
		c.log.Warn("could not give back a lock acquired as its connection closed; it stays until released",
			"keys", req.Keys, "owner", provider.DefaultOwner, "error", err)
	}
	return newError(CodeShuttingDown, "the connection is closing: the lock was given back")
}

// notAcquiredMessage is stock Medusa's message for a key that could not be acquired.
func notAcquiredMessage(key string) string { return `Failed to acquire lock for key "` + key + `"` }

func (c *conn) lease(ctx context.Context, req Request) (any, *Error) {
	opts := provider.LeaseOptions{Timeout: req.Timeout, Expire: req.Expire}
	if opts.Timeout == 0 {
		opts.Timeout = defaultLeaseTimeout
	}
	if opts.Expire == 0 {
		opts.Expire = defaultLeaseExpire
	}
	l, err := c.s.prov.AcquireLease(ctx, req.Keys, opts)
	c.mu.Lock()
	c.leasesPending--
	if err != nil {
		c.mu.Unlock()
		// A wait the client cancelled comes back as the cancellation cause rather than the
		// provider's conflict: it is stock's timeout. A real timeout is already a conflict
		// (ErrTimedOut); any other error, a dial timeout included, is Redis's.
		if errors.Is(context.Cause(ctx), errCancelled) {
			return nil, newError(CodeTimedOut, timedOutMessage)
		}
		return nil, mapError(ctx, err)
	}
	if c.closing { // the connection ended while the lease was being taken
		c.unreleased.Add(1)
		c.mu.Unlock()
		c.releaseLease(context.WithoutCancel(ctx), "", l)
		return nil, newError(CodeShuttingDown, "the connection is closing")
	}
	c.nextLease++
	id := leaseIDPrefix + strconv.FormatUint(c.nextLease, 10)
	entry := &leaseEntry{lease: l}
	c.leases[id] = entry
	c.watchers.Add(1)
	c.mu.Unlock()
	c.s.metrics.leasesHeld.Inc()
	go c.watch(id, entry)
	return leaseResult{Lease: id, Owner: l.Owner()}, nil
}

// watch pushes lease_lost as soon as the provider finds the lease lost. The lease stays on the
// connection (its remaining keys are released by lease_release or when the connection ends).
func (c *conn) watch(id string, e *leaseEntry) {
	defer c.watchers.Done()
	defer c.recoverInternal()
	<-e.lease.Done()
	lost := e.lease.Err()
	if lost == nil {
		return // released
	}
	c.mu.Lock()
	current := c.leases[id]
	report := current == e && !e.lost
	if report {
		e.lost = true
	}
	c.mu.Unlock()
	if !report {
		return
	}
	c.s.metrics.leasesHeld.Dec()
	c.s.metrics.leasesLost.Inc()
	keys := e.lease.Keys()
	var ce *provider.ConflictError
	if errors.As(lost, &ce) && len(ce.Keys) > 0 {
		keys = ce.Keys
	}
	c.log.Warn("lease lost", "lease", id, "keys", keys, "owner", e.lease.Owner())
	c.sendJSON(leaseLost{Type: "lease_lost", Lease: id, Keys: keys, Error: newError(CodeLockLost, lost.Error()).body()})
}

// leaseRelease releases a lease of this connection. The lease stays on the connection until its
// release succeeds: after a Redis error (the renewal has stopped) the client may retry, and the
// connection's end retries too.
func (c *conn) leaseRelease(ctx context.Context, id string) (any, *Error) {
	c.mu.Lock()
	e := c.leases[id]
	c.mu.Unlock()
	if e == nil {
		return nil, newError(CodeUnknownLease, fmt.Sprintf("no lease %s on this connection", quote(id)))
	}
	released, err := e.lease.Release(ctx)
	if err != nil {
		return nil, mapError(ctx, err)
	}
	c.mu.Lock()
	wasLost := e.lost
	forget := c.leases[id] == e // else a concurrent lease_release or the connection's end took it
	if forget {
		delete(c.leases, id)
	}
	c.mu.Unlock()
	if forget && !wasLost {
		c.s.metrics.leasesHeld.Dec()
	}
	return releasedResult{Released: released && !wasLost}, nil
}

// checkOwner enforces the token's owner prefix; "" stands for the anonymous owner "*".
func (c *conn) checkOwner(owner string) *Error {
	prefix := c.token.OwnerPrefix
	if prefix == "" {
		return nil
	}
	if owner == "" {
		owner = provider.DefaultOwner
	}
	if !strings.HasPrefix(owner, prefix) {
		return newError(CodeOwnerForbidden, fmt.Sprintf("owner %s is not allowed for this token: owners must start with %s",
			quote(owner), quote(prefix)))
	}
	return nil
}

// mapError turns a provider error into an error reply: conflicts keep Medusa's message.
func mapError(ctx context.Context, err error) *Error {
	switch {
	case err == nil:
		return nil
	case errors.Is(context.Cause(ctx), errShuttingDown):
		return newError(CodeShuttingDown, "the bridge is shutting down")
	case errors.Is(err, provider.ErrNotAcquired):
		return newError(CodeNotAcquired, err.Error())
	case errors.Is(err, provider.ErrTimedOut):
		return newError(CodeTimedOut, err.Error())
	case errors.Is(err, provider.ErrLockLost):
		return newError(CodeLockLost, err.Error())
	case errors.Is(err, provider.ErrInvalidArgument):
		return newError(CodeBadRequest, err.Error())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return newError(CodeRedisError, "the request ended before Redis answered: "+err.Error())
	default:
		return newError(CodeRedisError, err.Error())
	}
}
