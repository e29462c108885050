package bridge

import (
	"context"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/locktui/locktui/internal/backoff"
	"github.com/locktui/locktui/provider"
)

// end runs when the reader has stopped. It ends the connection's waits, waits for every
// request to be answered (the session records their outcomes), then frees the leases: at once
// when the client said it holds none of them (a close with 1000, a resume of its session),
// otherwise ClientTimeout after the last frame the connection received. The client considers
// them lost before that moment (see docs/bridge-protocol.md, Heartbeats), whatever happened to
// the TCP connection. When the server's context ends first (a shutdown cut short), the leases
// are left to expire with their TTL.
func (c *conn) end() {
	c.mu.Lock()
	c.closing = true
	last := c.lastReceived
	c.mu.Unlock()
	c.cancel(errConnClosed)
	c.requests.Wait()
	close(c.answered)
	c.s.sessions.ended(c.sess)

	c.mu.Lock()
	n := len(c.leases)
	c.mu.Unlock()
	if n == 0 {
		return
	}
	wait := time.NewTimer(time.Until(last.Add(c.s.cfg.ClientTimeout)))
	defer wait.Stop()
	abandon := false
	select {
	case <-c.releaseNow:
	case <-wait.C:
	case <-c.s.ctx.Done():
		abandon = true
	}
	c.mu.Lock()
	leases := c.leases
	c.leases = map[string]*leaseEntry{}
	c.mu.Unlock()
	if abandon {
		c.log.Warn("the bridge stopped before the leases of a closed connection could be freed; their keys expire with their TTL",
			"leases", len(leases))
		for _, e := range leases {
			c.forgetLease(e)
			e.lease.Abandon()
		}
		return
	}
	c.log.Debug("freeing the leases of a closed connection", "leases", len(leases))
	var wg sync.WaitGroup
	sem := make(chan struct{}, releaseWorkers)
	for id, e := range leases {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c.forgetLease(e)
			c.releaseLease(id, e.lease)
		})
	}
	wg.Wait()
}

// releaseLease releases a lease the connection no longer holds for its client, owner-checked,
// retrying in the background after a Redis error until it succeeds, the lease's keys have
// certainly expired or the server stops.
func (c *conn) releaseLease(id string, l *provider.Lease) {
	ctx, cancel := context.WithTimeout(c.s.ctx, releaseTimeout)
	_, err := l.Release(ctx)
	cancel()
	if err == nil {
		return
	}
	c.log.Warn("could not release a lease; retrying in the background", "lease", id, "keys", l.Keys(), "error", err)
	c.background.Go(func() { c.retryRelease(id, l) })
}

// Retries of a failed lease release: from releaseRetryMin, doubling up to releaseRetryMax, until
// releaseRetryFor after the lease's deadline (its keys have expired by then at the latest).
const (
	releaseRetryMin = 100 * time.Millisecond
	releaseRetryMax = 5 * time.Second
	releaseRetryFor = time.Minute
)

func (c *conn) retryRelease(id string, l *provider.Lease) {
	defer c.recoverInternal()
	giveUp := l.Deadline().Add(releaseRetryFor)
	retry := backoff.Doubling(releaseRetryMin, releaseRetryMax)
	for {
		t := time.NewTimer(retry.Next())
		select {
		case <-t.C:
		case <-c.s.ctx.Done():
			t.Stop()
			return
		}
		ctx, cancel := context.WithTimeout(c.s.ctx, releaseTimeout)
		_, err := l.Release(ctx)
		cancel()
		if err == nil {
			c.log.Info("released a lease after retrying", "lease", id, "keys", l.Keys())
			return
		}
		if time.Now().After(giveUp) {
			c.log.Warn("gave up releasing a lease; its keys have expired with their TTL", "lease", id, "keys", l.Keys(), "error", err)
			return
		}
	}
}

// takeOver ends the connection for a resume of its session by another connection: the client
// holds none of its leases, which are freed at once, and its waits end.
func (c *conn) takeOver() {
	c.saidClean()
	c.cancel(errResumed)
	_ = c.ws.NetConn().Close()
}

// goAway drains the connection for a shutdown that must end by drainEnd: the client is told with
// going_away, then new acquire and lease requests are refused and waits in flight end with
// shutting_down, and once the connection holds no lease and runs no request (or at drainEnd) it is
// closed with 1001. Leases still held then are freed as for any close that the client did not
// start (ClientTimeout after its last frame).
func (c *conn) goAway(drainEnd time.Time) {
	// going_away first: every shutting_down reply comes after it on the connection.
	c.sendJSON(goingAway{Type: EventGoingAway, DrainMS: max(0, time.Until(drainEnd).Milliseconds())})
	c.mu.Lock()
	c.stopping = true
	for _, r := range c.inflight {
		if r.cancel != nil {
			r.cancel(errShuttingDown)
		}
	}
	c.mu.Unlock()
	timer := time.NewTimer(time.Until(drainEnd))
	defer timer.Stop()
	for !c.idle() {
		select {
		case <-c.changed:
		case <-timer.C:
			c.log.Info("drain over with leases or requests left", "leases", c.leaseCount())
			c.closeAndCut()
			return
		case <-c.finished:
			return
		}
	}
	c.closeAndCut()
}

// closeAndCut sends a 1001 close and cuts the socket if the client does not answer it within
// closeGrace.
func (c *conn) closeAndCut() {
	c.closeWith(websocket.CloseGoingAway, "the bridge is shutting down")
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-c.finished:
	case <-c.answered:
	case <-t.C:
		_ = c.ws.NetConn().Close()
	}
}

// idle reports whether the connection holds no lease and runs no request.
func (c *conn) idle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.leases) == 0 && c.running == 0
}

func (c *conn) leaseCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.leases)
}
