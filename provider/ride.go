package provider

import (
	"context"
	"sync"
	"time"
)

// rideWait bounds how long a release holds its pipeline back for the attempt of the waiter it
// woke (see ride). A waiter woken from its sleep sends its attempt within tens of microseconds;
// one that does not join in time sends it on its own, as without the ride.
const rideWait = time.Millisecond

// ride lets a waiter of this Provider take the key that a release of the same Provider frees,
// one round trip sooner: the release wakes the waiter that has waited longest for the key before
// it sends its delete, and sends the waiter's next attempt in the same pipeline, behind the
// delete, so Redis runs the attempt right after the delete and the key passes from one call to
// the next in one round trip instead of two (the delete's, then the attempt's).
//
// Nothing about who may take the key changes: the attempt is the waiter's ordinary acquire.lua
// run, atomic in Redis like any other, and anyone else's attempt that Redis runs between the two
// can still take the key first. The ride changes only when the waiter's attempt is sent. The
// pipeline keeps the release's resend rule (a delete that must not be resent takes the attempt
// with it: go-redis then resends neither, and a failed attempt has an unknown outcome, as any
// attempt cut short, which the waiter's give-back covers).
//
// A waiter learns the outcome only after the release reported the release to the Observer, so
// observers still see a release before the acquisition it let in.
type ride struct {
	wait   time.Duration // how long take waits for the waiter (rideWait)
	mu     sync.Mutex
	closed bool       // the release sent its pipeline, or gave up on the ride
	call   *batchCall // the waiter's attempt, once it joined
	taken  bool       // the release took the waiter's attempt into its pipeline
	// joined is closed when the waiter's attempt joined (call is set).
	joined chan struct{}
	// reported is closed once the release told the Observer what it released.
	reported chan struct{}
}

func newRide(wait time.Duration) *ride {
	return &ride{wait: wait, joined: make(chan struct{}), reported: make(chan struct{})}
}

// join puts c, the waiter's attempt, into the release's pipeline. It reports false when the
// release has already sent it (or gave up on the ride): c must then go on its own.
func (r *ride) join(c *batchCall) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.closed, r.call = true, c
	close(r.joined)
	return true
}

// decline closes the ride without an attempt: the woken waiter will not send one at once (its
// wait ended, or it must first extend the keys it holds). It is nil-safe.
func (r *ride) decline() {
	if r != nil {
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
	}
}

// take waits up to r.wait for the waiter's attempt and closes the ride; it returns the
// attempt, or nil when the waiter did not join in time or the ride was closed before (the
// release's pipeline is sent again after NOSCRIPT: the attempt went with the first one).
func (r *ride) take() *batchCall {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if !closed {
		t := time.NewTimer(r.wait)
		select {
		case <-r.joined:
		case <-t.C:
		}
		t.Stop()
	}
	return r.close()
}

// close closes the ride at once and returns the attempt that joined it, if any, once.
func (r *ride) close() *batchCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	c := r.call
	r.call = nil
	r.taken = r.taken || c != nil
	return c
}

// rode reports whether the waiter's attempt went with the release: when it did not (the waiter
// did not join in time, or its registration ended), the release wakes a waiter after its reply,
// as without the ride.
func (r *ride) rode() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.taken
}

// releaseRideKey and attemptRideKey carry a ride in the context of the release that offers it
// and of the attempt that joins it, down to the batcher.
type (
	releaseRideKey struct{}
	attemptRideKey struct{}
)

func withReleaseRide(ctx context.Context, r *ride) context.Context {
	return context.WithValue(ctx, releaseRideKey{}, r)
}

func withAttemptRide(ctx context.Context, r *ride) context.Context {
	return context.WithValue(ctx, attemptRideKey{}, r)
}

func releaseRideOf(ctx context.Context) *ride {
	r, _ := ctx.Value(releaseRideKey{}).(*ride)
	return r
}

func attemptRideOf(ctx context.Context) *ride {
	r, _ := ctx.Value(attemptRideKey{}).(*ride)
	return r
}
