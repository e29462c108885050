package bridge

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/locktui/locktui/provider"
)

// end marks the connection closing, ends every request's context and releases every lease,
// owner-checked, releaseWorkers at a time, each release waited for until ctx ends or
// releaseTimeout passes. When ctx ends first, end returns at once: the releases not finished
// (counted in c.unreleased) go on in the background, and run waits for them before the
// connection is forgotten. A second call has nothing left to release.
func (c *conn) end(ctx context.Context, cause error) {
	c.mu.Lock()
	c.closing = true
	leases := c.leases
	c.leases = map[string]*leaseEntry{}
	held := 0
	for _, e := range leases {
		if !e.lost {
			held++
		}
	}
	if len(leases) > 0 {
		// Under c.mu, so that run (which marks the connection closing under c.mu too) cannot
		// reach its wait for the releases before this one is counted.
		c.releasing.Add(1)
		c.unreleased.Add(int64(len(leases)))
	}
	c.mu.Unlock()
	c.cancel(cause)
	c.log.Debug("connection ending", "cause", cause, "leases", len(leases))
	if len(leases) == 0 {
		return
	}
	c.s.metrics.leasesHeld.Sub(float64(held))
	all := make(chan struct{})
	go func() {
		defer c.releasing.Done()
		defer close(all)
		var wg sync.WaitGroup
		sem := make(chan struct{}, releaseWorkers)
		for id, e := range leases {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				c.releaseLease(ctx, id, e.lease)
			})
		}
		wg.Wait()
	}()
	select {
	case <-all:
	case <-ctx.Done():
	}
}

// releaseLease releases one lease of an ending connection, owner-checked. The caller has counted
// it in c.unreleased. It waits until the release is done, ctx ends or releaseTimeout passes; a
// release still running then goes on in the background (it stops the renewal in any case, and
// the keys expire with their TTL if it never reaches Redis).
func (c *conn) releaseLease(parent context.Context, id string, l *provider.Lease) {
	log := c.log.With("lease", id, "keys", l.Keys(), "owner", l.Owner())
	ctx, cancel := context.WithTimeout(parent, releaseTimeout)
	done := make(chan struct{})
	c.releasing.Go(func() {
		defer cancel()
		defer close(done)
		_, err := l.Release(ctx)
		c.unreleased.Add(-1)
		if err != nil {
			log.Warn("could not release a lease of a closed connection; its keys expire with their TTL", "error", err)
			return
		}
		c.released.Add(1)
	})
	select {
	case <-done:
	case <-ctx.Done():
		select {
		case <-done: // at the same moment
		default:
			level := slog.LevelWarn
			if parent.Err() != nil {
				level = slog.LevelDebug // a shutdown cut short: Server.Shutdown reports the total
			}
			log.Log(context.Background(), level, "gave up waiting for the release of a lease of a closed connection; it goes on in the background, else its keys expire with their TTL",
				"error", context.Cause(ctx))
		}
	}
}

// goAway ends the connection for a shutdown: new requests are refused, waits in flight end with
// shutting_down, leases are released, then a 1001 close follows the last reply. Every wait is
// bounded by ctx.
func (c *conn) goAway(ctx context.Context) {
	c.mu.Lock()
	c.stopping = true
	for _, r := range c.inflight {
		if r.cancel != nil {
			r.cancel(errShuttingDown)
		}
	}
	c.mu.Unlock()
	answered := make(chan struct{})
	go func() {
		c.requests.Wait()
		close(answered)
	}()
	select {
	case <-answered:
	case <-ctx.Done():
	}
	c.end(ctx, errShuttingDown)
	select {
	case c.out <- outFrame{closeCode: websocket.CloseGoingAway, closeText: "the bridge is shutting down"}:
	case <-c.writerDone:
	case <-ctx.Done():
	}
	grace := time.NewTimer(closeGrace)
	defer grace.Stop()
	select {
	case <-c.finished:
		return
	case <-grace.C:
	case <-ctx.Done():
	}
	_ = c.ws.Close() // the client did not answer the close: cut it
	select {
	case <-c.finished:
	case <-ctx.Done():
	}
}
