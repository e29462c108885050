package bridge

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/locktui/locktui/provider"
)

// Lease defaults, as stock execute's.
const (
	defaultLeaseTimeout = provider.DefaultWaitLockingTimeout
	defaultLeaseExpire  = provider.DefaultLeaseExpire
	// leaseIDPrefix starts every lease id: "L1", "L2", … per connection.
	leaseIDPrefix = "L"
	// minRenewInterval is the provider's shortest renewal interval.
	minRenewInterval = 250 * time.Millisecond
)

// grantHook, set by tests only, runs after a lease was taken and before its grant is queued.
var grantHook func(*provider.Lease)

// leaseEntry is a lease held for this connection.
type leaseEntry struct {
	lease    *provider.Lease
	expire   time.Duration // its TTL
	renewals float64       // its share of the connection's renewal budget
	lost     bool          // lease_lost was sent; what it still holds waits for its holder to stop believing
}

// leaseExpire is the expire a lease request gets: the default when absent, at least
// MinLeaseExpire.
func (c *conn) leaseExpire(expire time.Duration) time.Duration {
	if expire == 0 {
		expire = defaultLeaseExpire
	}
	return max(expire, time.Duration(c.limits.MinLeaseExpire)*time.Second)
}

// leaseRenewals is how many key renewals per second a lease of keys and expire costs: every
// key every max(expire/3, 250 ms).
func leaseRenewals(keys []string, expire time.Duration) float64 {
	unique := map[string]struct{}{}
	for _, k := range keys {
		unique[k] = struct{}{}
	}
	return float64(len(unique)) / max(expire/3, minRenewInterval).Seconds()
}

// lease takes a lease; t is its turn among the connection's waits, and the wait for it counts
// against the request's timeout.
func (c *conn) lease(ctx context.Context, req Request, renewals float64, t *turn) (any, *Error) {
	opts := provider.LeaseOptions{Timeout: req.Timeout, Expire: c.leaseExpire(req.Expire), Holder: c.holder}
	if opts.Timeout == 0 {
		opts.Timeout = defaultLeaseTimeout
	}
	if opts.Expire != req.Expire && req.Expire != 0 {
		c.s.metrics.expireRaised.Inc()
	}
	if c.token.OwnerPrefix != "" {
		opts.Owner = c.token.OwnerPrefix + provider.NewExecuteOwner()
	}
	start := time.Now()
	var l *provider.Lease
	err := c.order.wait(ctx, t, opts.Timeout)
	if err == nil {
		if opts.Timeout -= time.Since(start); opts.Timeout <= 0 {
			err = errTurnTimedOut
		}
	}
	if err == nil {
		opts.Queued = c.order.leaver(t)
		l, err = c.s.prov.AcquireLease(ctx, req.Keys, opts)
	}
	c.mu.Lock()
	c.leasesPending--
	if err != nil {
		c.renewals -= renewals
		c.mu.Unlock()
		c.signalChange()
		// A wait the client cancelled comes back as the cancellation cause rather than the
		// provider's conflict: it is stock's timeout. A real timeout is already a conflict
		// (ErrTimedOut); any other error, a dial timeout included, is Redis's.
		if (errors.Is(context.Cause(ctx), errCancelled) || errors.Is(err, errTurnTimedOut)) &&
			!errors.Is(err, provider.ErrOutcomeUnknown) {
			return nil, newError(CodeTimedOut, timedOutMessage)
		}
		return nil, mapError(ctx, err)
	}
	if c.closing || c.stopping { // the connection ended, or the drain began, while the lease was taken
		c.renewals -= renewals
		c.mu.Unlock()
		c.releaseLease("", l)
		c.signalChange()
		return nil, newError(CodeShuttingDown, "the connection is closing: the lease was given back")
	}
	c.nextLease++
	id := leaseIDPrefix + strconv.FormatUint(c.nextLease, 10)
	// The provider's TTL: whole seconds, rounded up.
	e := &leaseEntry{lease: l, expire: (opts.Expire + time.Second - 1).Truncate(time.Second), renewals: renewals}
	c.leases[id] = e
	c.mu.Unlock()
	c.s.metrics.leasesHeld.Inc()
	if grantHook != nil {
		grantHook(l)
	}
	// The watcher starts once the grant is queued (see leaseResult.watch): a lease_lost must
	// never reach the client before the grant of its lease.
	now := time.Now()
	return leaseResult{Lease: id, Owner: l.Owner(), ValidMS: validMS(l, now), WaitedMS: now.Sub(start).Milliseconds(),
		fencing: fencing{FencingToken: l.FencingToken(), FencingTokens: l.FencingTokens()},
		watch: func() {
			c.watchers.Add(1)
			go c.watch(id, e)
		}}, nil
}

// validMS is how long the lease's keys are certainly its own from now, in milliseconds: 0 once
// the lease has ended, whatever its deadline.
func validMS(l *provider.Lease, now time.Time) int64 {
	select {
	case <-l.Done():
		return 0
	default:
		return max(0, l.Deadline().Sub(now).Milliseconds())
	}
}

// pingResult lists the leases held with their validity.
func (c *conn) pingResult() pingResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := pingResult{Leases: make(map[string]int64, len(c.leases))}
	for id, e := range c.leases {
		if !e.lost {
			r.Leases[id] = validMS(e.lease, time.Now())
		}
	}
	return r
}

// forgetLease takes e off the connection's books (the caller removed it from c.leases).
func (c *conn) forgetLease(e *leaseEntry) {
	c.mu.Lock()
	c.renewals -= e.renewals
	c.mu.Unlock()
	c.s.metrics.leasesHeld.Dec()
	c.signalChange()
}

// take removes the lease id from the connection and reports whether it was still there.
func (c *conn) take(id string, e *leaseEntry) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leases[id] != e {
		return false // a lease_release or the connection's end took it
	}
	delete(c.leases, id)
	return true
}

// watch pushes lease_lost as soon as the provider finds the lease lost. What the lease still
// holds is released (owner-checked) only once its holder has certainly stopped believing: the
// client acknowledges with lease_release, the connection's leases are freed (end), or the
// lease's deadline plus a tenth of its TTL passes (the client's own deadline for it is earlier,
// see docs/bridge-protocol.md). Until then a slow link could keep the client from being told.
func (c *conn) watch(id string, e *leaseEntry) {
	defer c.watchers.Done()
	defer c.recoverInternal()
	<-e.lease.Done()
	lost := e.lease.Err()
	if lost == nil {
		return // released or abandoned
	}
	c.mu.Lock()
	held := c.leases[id] == e
	if held {
		e.lost = true
		c.renewals -= e.renewals // it renews no more
		e.renewals = 0
	}
	c.mu.Unlock()
	if !held {
		return // a lease_release or the connection's end took it
	}
	c.s.metrics.leasesLost.Inc()
	keys := e.lease.Keys()
	var ce *provider.ConflictError
	if errors.As(lost, &ce) && len(ce.Keys) > 0 {
		keys = ce.Keys
	}
	c.log.Warn("lease lost", "lease", id, "keys", keys, "owner", e.lease.Owner(), "cause", lost)
	c.sendJSON(leaseLost{Type: EventLeaseLost, Lease: id, Keys: keys, Error: newError(CodeLockLost, lost.Error()).body()})
	believed := time.NewTimer(time.Until(e.lease.Deadline().Add(provider.SafetyMargin(e.expire))))
	defer believed.Stop()
	select {
	case <-believed.C:
	case <-c.ctx.Done():
		return // the connection ended: end frees it with the others
	}
	if c.take(id, e) {
		c.forgetLease(e)
		c.releaseLease(id, e.lease)
	}
}

// leaseRelease releases a lease of this connection. After a Redis error the lease stays on the
// connection (the client may send lease_release again) and the bridge retries in the
// background.
func (c *conn) leaseRelease(ctx context.Context, id string) (any, *Error) {
	c.mu.Lock()
	e := c.leases[id]
	issued := c.issued(id)
	c.mu.Unlock()
	if e == nil {
		if issued {
			return releasedResult{Released: false}, nil // lost or released already
		}
		return nil, newError(CodeUnknownLease, fmt.Sprintf("no lease %s on this connection", quote(id)))
	}
	released, err := e.lease.Release(ctx)
	if err != nil {
		c.background.Go(func() {
			c.retryRelease(id, e.lease)
			if c.take(id, e) {
				c.forgetLease(e)
			}
		})
		return nil, mapError(ctx, err)
	}
	if c.take(id, e) {
		c.forgetLease(e)
	}
	return releasedResult{Released: released}, nil
}

// issued reports whether id names a lease this connection gave out; c.mu is held.
func (c *conn) issued(id string) bool {
	n, err := strconv.ParseUint(strings.TrimPrefix(id, leaseIDPrefix), 10, 64)
	return strings.HasPrefix(id, leaseIDPrefix) && err == nil && n >= 1 && n <= c.nextLease
}
